"""After a compaction the prefix survives: the observations block (task state, environment), the one
part of a view that changes from call to call, comes last, and the message breakpoint goes before it, so
from the second call after a compaction on nearly all input is read from the cache, under the Anthropic
breakpoint model and the OpenAI prefix model alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova.context.cache_sim import (
    AnthropicCache,
    Block,
    OpenAICache,
    hit_rate,
    post_compaction_usage,
    request_blocks,
    request_usage,
    volatile_tail,
)
from nova.messages import Message
from nova.model import CacheHints, ModelRequest, Usage
from nova.providers.formats.anthropic import message_breakpoint_index, messages_to_anthropic
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter


def _observations(text: str) -> Message:
    return Message.user(text, id=f"ctx-{text}", origin="context")


def test_the_message_breakpoint_skips_the_observations_at_the_end() -> None:
    history = [Message.user("task", id="u1"), Message.assistant("ok", id="a1"), Message.user("more", id="u2")]
    assert message_breakpoint_index(history) == 2
    assert message_breakpoint_index([*history, _observations("state v1")]) == 2
    assert volatile_tail([*history, _observations("state v1")]) == 1 and volatile_tail(history) == 0
    wire = messages_to_anthropic([*history, _observations("state v1")], cache=CacheHints(last_user_message=True))
    marked = [i for i, m in enumerate(wire) if any("cache_control" in b for b in m["content"])]
    assert marked == [2]


def test_a_changed_tail_is_read_uncached_and_the_prefix_before_it_stays_readable() -> None:
    cache = AnthropicCache(min_tokens=1024)
    blocks = [Block(b"head", 2000), Block(b"m1", 500), Block(b"obs1", 100)]
    first = cache.call(blocks, head=1, at=None, tail=1)
    assert (first.cache_write_tokens, first.input_tokens) == (2500, 100)
    second = cache.call([*blocks[:2], Block(b"m2", 300), Block(b"obs2", 100)], head=1, at=None, tail=1)
    assert (second.cache_read_tokens, second.cache_write_tokens, second.input_tokens) == (2500, 300, 100)


def test_post_compaction_usage_counts_calls_two_on() -> None:
    u = [Usage(cache_read_tokens=10), Usage(cache_write_tokens=50), Usage(cache_read_tokens=90, input_tokens=10),
         Usage(cache_write_tokens=40), Usage(cache_read_tokens=30)]
    total = post_compaction_usage([(False, u[0]), (True, u[1]), (False, u[2]), (True, u[3]), (False, u[4])])
    assert total == u[2] + u[4]
    assert hit_rate(total) == pytest.approx(120 / 130)
    assert hit_rate(post_compaction_usage([(False, u[0])])) is None


def test_the_demo_reads_at_least_90_percent_from_the_cache_after_its_compaction(
        tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nova.agent.builder import AgentOptions
    from nova.agent.demo import DEMO_PROMPT, make_demo_project, make_demo_provider
    from nova.cli.commands.cli_settings import settings_from_cli
    from nova.cli.commands.run import run_task

    monkeypatch.setenv("NOVA_HOME", str(nova_home))
    provider = make_demo_provider()
    run_task(settings_from_cli(provider="demo", model="nova-demo"), provider,
             AgentOptions(cwd=make_demo_project(tmp_path / "demo"), yes=True, max_steps=20), DEMO_PROMPT, quiet=True)
    requests: list[ModelRequest] = provider.requests
    counter = HeuristicCounter(CL100K_PROFILE)
    for cache in (AnthropicCache(), OpenAICache()):
        calls, summaries = [], set[str]()
        for request in requests:
            now = {m.id for m in request.messages if m.origin == "summary"}
            calls.append((bool(now - summaries), request_usage(cache, request, counter)))
            summaries |= now
        assert sum(first for first, _ in calls) >= 1, "the demo compacts"
        after = post_compaction_usage(calls)
        assert after.context_tokens > 0, "calls follow the compaction"
        rate = hit_rate(after)
        assert rate is not None and rate >= 0.9, (type(cache).__name__, after)
    # The call that first sends the compacted view writes only what follows the opening message: the tools,
    # the system text and that message, which the compaction left where it was, are read from the cache.
    first_after = next(i for i, r in enumerate(requests) if any(m.origin == "summary" for m in r.messages))
    opening = next(m for m in requests[0].messages if m.role != "system")
    assert next(m for m in requests[first_after].messages if m.role != "system") == opening
    blocks, head = request_blocks(requests[first_after], counter)
    kept = sum(b.tokens for b in blocks[: head + 1])
    anthropic = AnthropicCache()
    usage = [request_usage(anthropic, r, counter) for r in requests[: first_after + 1]][-1]
    assert usage.cache_read_tokens >= kept


def test_a_resume_after_the_demo_compaction_sends_the_opening_as_it_was(
        tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The resumed view starts as the compacted one did: the person's opening message alone, then the
    # summary. Merged into one message, the opening would leave the cached prefix, and the next
    # compaction would fold it into a summary instead of keeping it.
    from nova.agent.builder import AgentOptions
    from nova.agent.demo import DEMO_PROMPT, make_demo_project, make_demo_provider
    from nova.cli.commands.cli_settings import settings_from_cli
    from nova.cli.commands.run import run_task

    monkeypatch.setenv("NOVA_HOME", str(nova_home))
    settings = settings_from_cli(provider="demo", model="nova-demo")
    options = AgentOptions(cwd=make_demo_project(tmp_path / "demo"), yes=True, max_steps=20)
    first, again = make_demo_provider(), make_demo_provider()
    done = run_task(settings, first, options, DEMO_PROMPT, quiet=True)
    run_task(settings, again, options, "What did you change?", quiet=True, resume_id=str(done["session_id"]))
    before: list[ModelRequest] = first.requests
    after: list[ModelRequest] = again.requests
    assert after, "the resumed turn calls the model"
    compacted = next(r for r in reversed(before) if any(m.origin == "summary" for m in r.messages))
    sent = [m for m in compacted.messages if m.role != "system"]
    resumed = [m for m in after[0].messages if m.role != "system"]
    assert resumed[0].parts == sent[0].parts and resumed[0].origin is None
    assert resumed[1].origin == "summary" and resumed[1].parts == sent[1].parts
    counter = HeuristicCounter(CL100K_PROFILE)
    anthropic = AnthropicCache()
    for request in before:
        request_usage(anthropic, request, counter)
    blocks, head = request_blocks(after[0], counter)
    usage = request_usage(anthropic, after[0], counter)
    assert usage.cache_read_tokens >= sum(b.tokens for b in blocks[: head + 1])
