"""The session's cache planner and cache-break monitor, which redo only what changed since the previous
request, always give what planning and diagnosing each request from scratch gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nova.context.cache import TTL_SECONDS, CachePlanner, apply_cache_plan, plan_cache
from nova.context.cache_diagnosis import RULES_HEADING, CacheMonitor, Segment, first_changed, request_segments
from nova.messages import Message
from nova.model import CacheHints, ModelRequest, ToolSpec, Usage
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter
from nova.tokens.memo import MemoCounter

from .histories import edits, replay

COUNTER = HeuristicCounter(CL100K_PROFILE)
TOOLSETS = (
    [ToolSpec("bash", "run", {"type": "object"}), ToolSpec("read_file", "read", {"type": "object"})],
    [ToolSpec("bash", "run", {"type": "object"})],
    [ToolSpec("bash", "run a command", {"type": "object"}), ToolSpec("read_file", "read", {"type": "object"})],
)
# "contract\n\n" is the contract part of the rules systems: adding rules to it only adds a segment.
SYSTEMS = ("contract", f"contract\n\n{RULES_HEADING}\n\nuse tabs", f"contract\n\n{RULES_HEADING}\n\nuse spaces", "",
           "contract\n\n")
hints = st.builds(CacheHints, system=st.booleans(), last_tool=st.booleans(), last_user_message=st.booleans(),
                  ttl=st.sampled_from(["5m", "1h"]), head_ttl=st.sampled_from([None, "5m", "1h"]))
heads = st.tuples(st.integers(0, len(TOOLSETS) - 1), st.integers(0, len(SYSTEMS) - 1))


def request(messages: Sequence[Message], head: tuple[int, int], cache: CacheHints = CacheHints(),
            model: str = "claude-sonnet-4-5") -> ModelRequest:
    return ModelRequest(model=model, system=SYSTEMS[head[1]], messages=list(messages), tools=TOOLSETS[head[0]],
                        cache=cache)


PLANNER_DRAWS = dict(steps=edits(), cache=st.lists(hints, min_size=12, max_size=12),
                     head=st.lists(heads, min_size=12, max_size=12), minimum=st.sampled_from([None, 0, 5, 40]))


def check_cache_planner_matches_plan_cache(steps: list, cache: list[CacheHints], head: list[tuple[int, int]],
                                           minimum: int | None) -> None:
    counter = MemoCounter(COUNTER)
    planner = CachePlanner(counter)
    for history, hint, h in zip(replay(steps), cache, head, strict=False):
        req = request(history, h, hint, model="claude-haiku-4-5" if h[0] == 2 else "claude-sonnet-4-5")
        assert planner.plan(req, min_tokens=minimum) == plan_cache(req, counter=COUNTER, min_tokens=minimum)
        assert planner.apply(req) == apply_cache_plan(req, counter=COUNTER)


@settings(max_examples=40, deadline=None)
@given(**PLANNER_DRAWS)
def test_cache_planner_matches_plan_cache(**drawn: Any) -> None:
    check_cache_planner_matches_plan_cache(**drawn)


@pytest.mark.slow  # the same property over 200 examples
@settings(max_examples=200, deadline=None)
@given(**PLANNER_DRAWS)
def test_cache_planner_matches_plan_cache_over_many_histories(**drawn: Any) -> None:
    check_cache_planner_matches_plan_cache(**drawn)


# -- the reference: diagnose a pair of requests from scratch -------------------------------------------
def reference_cause(before: list[Segment], after: list[Segment], index: int, req: ModelRequest) -> str:
    old = before[index]
    new = after[index] if index < len(after) else None
    tool_names = [s.name for s in before if s.kind == "tool"], [s.name for s in after if s.kind == "tool"]
    if old.kind == "tool" or (new is not None and new.kind == "tool") or tool_names[0] != tool_names[1]:
        return "tool catalog changed"
    if old.kind in ("rules", "system") and new is not None and new.kind == old.kind:
        return f"{old.kind} changed"
    if old.kind in ("rules", "system") or (new is not None and new.kind in ("rules", "system")):
        return "rules changed"
    if new is None or new.kind == "summary" or old.kind == "summary" or len(after) < len(before):
        return "compaction"
    if old.kind == "memory" or new.kind == "memory":
        return "memory changed"
    messages = [m for m in req.messages if m.role != "system"]
    position = index - (len(after) - len(messages))
    if 0 <= position < len(messages) and messages[position].metadata.get("snipped"):
        return "snip"
    return "history rewritten"


def reference_break(previous: ModelRequest, cached: int, gap: float, req: ModelRequest,
                    usage: Usage) -> tuple[str, str, int] | None:
    if cached <= 0 or usage.cache_read_tokens >= cached:
        return None
    before, after = request_segments(previous), request_segments(req)
    index = first_changed(before, after)
    expired = gap > TTL_SECONDS.get(previous.cache.ttl, 300.0)
    if index is None or (expired and usage.cache_read_tokens == 0):
        cause = "ttl expired" if expired else "evicted"
        segment = "(whole prefix)" if index is None else before[index].name
    else:
        cause = reference_cause(before, after, index, req)
        segment = after[index].name if index < len(after) else before[index].name
    return segment, cause, cached - usage.cache_read_tokens


usages = st.builds(Usage, input_tokens=st.just(10), cache_read_tokens=st.sampled_from([0, 0, 100, 5000]),
                   cache_write_tokens=st.sampled_from([0, 200, 3000]))


MONITOR_DRAWS = dict(steps=edits(), head=st.lists(heads, min_size=12, max_size=12),
                     usage=st.lists(usages, min_size=12, max_size=12),
                     gaps=st.lists(st.sampled_from([1.0, 200.0, 400.0, 4000.0]), min_size=12, max_size=12),
                     ttl=st.lists(st.sampled_from(["5m", "1h"]), min_size=12, max_size=12))


def check_cache_monitor_matches_a_diagnosis_from_scratch(steps: list, head: list[tuple[int, int]], usage: list[Usage],
                                                         gaps: list[float], ttl: list[str]) -> None:
    monitor = CacheMonitor(model="claude-sonnet-4-5")
    previous: tuple[ModelRequest, int, float] | None = None
    at = 1000.0
    for history, h, use, gap, t in zip(replay(steps), head, usage, gaps, ttl, strict=False):
        at += gap
        req = request(history, h, CacheHints(ttl=t))  # type: ignore[arg-type]
        report = monitor.observe(req, use, at=at)
        expected = reference_break(previous[0], previous[1], at - previous[2], req, use) if previous else None
        got = (report.segment, report.cause, report.missed_tokens) if report is not None else None
        assert got == expected
        previous = (req, use.cache_read_tokens + use.cache_write_tokens, at)


@settings(max_examples=60, deadline=None)
@given(**MONITOR_DRAWS)
def test_cache_monitor_matches_a_diagnosis_from_scratch(**drawn: Any) -> None:
    check_cache_monitor_matches_a_diagnosis_from_scratch(**drawn)


@pytest.mark.slow  # the same property over 300 examples
@settings(max_examples=300, deadline=None)
@given(**MONITOR_DRAWS)
def test_cache_monitor_matches_a_diagnosis_from_scratch_over_many_histories(**drawn: Any) -> None:
    check_cache_monitor_matches_a_diagnosis_from_scratch(**drawn)


def test_a_long_session_is_diagnosed_without_hashing_it_again() -> None:
    history = [Message.user(f"step {i}", id=f"u{i}") for i in range(3000)]
    monitor = CacheMonitor(model="claude-sonnet-4-5")
    warm = Usage(input_tokens=10, cache_write_tokens=50_000)
    monitor.observe(request(history, (0, 1)), warm, at=0.0)
    hashed = len(monitor._messages._fingerprints)
    history.append(Message.user("one more", id="last"))
    assert monitor.observe(request(history, (0, 1)), Usage(cache_read_tokens=50_000), at=1.0) is None
    assert len(monitor._messages._fingerprints) == hashed + 1
    # A snip deep inside is still named, at its place.
    history[1500] = history[1500].with_parts(history[1500].parts[:0]).with_metadata(snipped=True)
    report = monitor.observe(request(history, (0, 1)), Usage(cache_read_tokens=1000), at=2.0)
    assert report is not None and report.cause == "snip" and report.segment == "message 1500 (user u1500)"
