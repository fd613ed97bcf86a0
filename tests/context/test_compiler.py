"""The context compiler: determinism, provenance coverage, the budget and policy conflicts (CTX-1..4)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from nova.context.compiler import CompileInput, ContextCompiler, SourceText, compile, current_request_index
from nova.context.policy import PolicySource
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart
from nova.model import ToolSpec, Usage
from nova.testing import call
from nova.tokens import TokenLedger
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

TOOLS = [ToolSpec("read_file", "Read a file.", {"type": "object"}), ToolSpec("bash", "Run a command.",
                                                                              {"type": "object"})]
HEAD = [SourceText(id="system.contract", cls="always-on", source="nova: SYSTEM_CONTRACT",
                   text="You are Nova, a coding agent.", reason="contract"),
        SourceText(id="rules:/p/NOVA.md", cls="always-on", source="file:/p/NOVA.md#abc", text="Use 4 spaces.\n"
                   "Always push to main after tests pass.", reason="project rules")]


def turn(i: int) -> list[Message]:
    use = call("bash", id=f"toolu_{i:04d}", command=f"pytest -k t{i}")
    return [Message.user(f"request {i}", id=f"u{i:04d}", created_at=1.0),
            Message(role="assistant", parts=(use,), id=f"a{i:04d}", created_at=1.0),
            Message(role="user", parts=(ToolResultPart(use.id, f"output {i}\n[exit code: 0]"),), id=f"r{i:04d}",
                    created_at=1.0),
            Message.assistant(f"done {i}", id=f"d{i:04d}", created_at=1.0)]


def history(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out += turn(i)
    return [*out, Message.user("the current request: fix the parser", id="req", created_at=1.0)]


def inputs(hist: list[Message], **kw: object) -> CompileInput:
    base: dict[str, object] = dict(
        head=HEAD, tools=TOOLS, history=hist, limit=100_000, window=128_000,
        pinned=SourceText(id="task.state", cls="pinned", source="task state v3", text="Goal: fix the parser\n"
                          "Constraint: merge not approved", reason="pinned task state"),
        observations=[SourceText(id="environment", cls="always-on", source="env", text="[Environment]\ncwd: /p",
                                 reason="env", priority=10)],
        counter=HeuristicCounter(CL100K_PROFILE))
    base.update(kw)
    return CompileInput(**base)  # type: ignore[arg-type]


def test_same_inputs_give_byte_identical_views_and_manifests() -> None:
    first = compile(inputs(history(40)))
    second = compile(inputs(history(40)))
    assert first.view.to_bytes() == second.view.to_bytes()
    assert first.manifest.to_dict() == second.manifest.to_dict()


def test_a_long_lived_compiler_gives_what_a_fresh_one_gives() -> None:
    compiler = ContextCompiler()
    hist = history(10)
    for extra in range(1, 30):
        grown = history(10 + extra)
        cached = compiler.compile(inputs(grown))
        fresh = compile(inputs(grown))
        assert cached.view.to_bytes() == fresh.view.to_bytes()
        assert cached.manifest.to_dict() == fresh.manifest.to_dict()
    # A rewrite in the middle (a snip) is noticed, not served from the cache.
    snipped = list(grown)
    snipped[2] = snipped[2].with_parts([ToolResultPart("toolu_0000", "[... cut ...]")])
    assert compiler.compile(inputs(snipped)).manifest.to_dict() == compile(inputs(snipped)).manifest.to_dict()
    assert hist


def test_layout_is_head_tools_history_request_observations() -> None:
    hist = history(3)
    compiled = compile(inputs(hist))
    assert compiled.view.system == "\n\n".join(p.text for p in HEAD)
    assert [t.name for t in compiled.view.tools] == ["bash", "read_file"]  # sorted: a stable catalog
    messages = compiled.view.messages
    assert list(messages[: len(hist)]) == hist  # history, then the request, untouched
    assert messages[-1].origin == "context"
    assert "Goal: fix the parser" in messages[-1].text and "cwd: /p" in messages[-1].text


def test_every_token_of_the_view_belongs_to_one_segment_with_a_source() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    ledger = TokenLedger(counter)
    hist = history(50)
    ledger.record("d0049", Usage(input_tokens=9000, output_tokens=12))  # a real figure: TOK-1 anchor
    compiled = ContextCompiler().compile(inputs(hist, ledger=ledger))
    manifest = compiled.manifest
    assert manifest.used == ledger.estimate(compiled.view.messages, compiled.view.system, list(compiled.view.tools))
    assert sum(s.tokens for s in manifest.segments) == manifest.used
    assert all(s.source and s.reason and s.version for s in manifest.segments)
    # Messages: each in exactly one segment.
    owners = Counter(i for s in manifest.segments if s.visibility == "messages" for i in set(s.message_ids))
    assert set(owners) == {m.id for m in compiled.view.messages}
    assert set(owners.values()) <= {1, 2}  # the observation message is split over its pieces only
    observation_ids = {m.id for m in compiled.view.messages if m.origin == "context"}
    assert {i for i, n in owners.items() if n > 1} <= observation_ids
    # System: the head segments' texts make up the system text exactly; tools: one segment.
    assert "\n\n".join(s.text for s in manifest.segments if s.visibility == "system") == compiled.view.system
    assert [s.id for s in manifest.segments if s.visibility == "tools"] == ["tools"]


def test_why_finds_the_segment_holding_a_text() -> None:
    compiled = compile(inputs(history(5)))
    assert [s.id for s in compiled.why("merge not approved")] == ["task.state"]
    assert [s.id for s in compiled.why("output 3")] == ["history.00000"]
    assert [s.id for s in compiled.why("fix the parser")] == ["request", "task.state"]


def _memory_message(*entries: tuple[str, str]) -> Message:
    body = "\n".join(f'<memory name="{n}" type="project" status="active">\n{t}\n</memory>' for n, t in entries)
    return Message(role="user", parts=(TextPart(f"<recalled-memories>\n{body}\n</recalled-memories>"),),
                   id="mem1", created_at=1.0, origin="memory", metadata={"memories": [n for n, _ in entries]})


def test_a_memory_conflicting_with_a_higher_rule_is_suppressed_and_the_manifest_says_so() -> None:
    hist = history(2)
    hist.append(_memory_message(("push-style", "The user likes us to push to main directly."),
                                ("editor", "The user edits with vim.")))
    policy = [PolicySource(level="org", id="policy:/etc/policy.md", text="Never push to main.")]
    compiled = compile(inputs(hist, policy=policy))
    text = "\n".join(m.text for m in compiled.view.messages)
    assert "vim" in text and "push to main directly" not in text
    dropped = {d.id: d for d in compiled.manifest.dropped}
    assert "memory:push-style" in dropped
    assert "Never push to main." in dropped["memory:push-style"].reason
    assert "org" in dropped["memory:push-style"].reason


def test_org_policy_cuts_a_conflicting_project_line_and_overrides_the_request() -> None:
    hist = [*history(1)[:-1], Message.user("Push to main after tests pass.", id="req", created_at=1.0)]
    policy = [PolicySource(level="org", id="policy:/etc/policy.md", text="Never push to main."),
              PolicySource(level="project", id="rules:/p/NOVA.md", text=HEAD[1].text)]
    compiled = compile(inputs(hist, policy=policy))
    assert "Always push to main" not in compiled.view.system and "Use 4 spaces." in compiled.view.system
    assert any(d.id == "rules:/p/NOVA.md:line" for d in compiled.manifest.dropped)
    resolution = compiled.manifest.by_id()["policy.resolution"]
    assert "Never push to main." in compiled.segment_text(resolution)


def test_over_budget_drops_memories_then_observations_never_the_pinned_state() -> None:
    hist = history(3)
    hist.append(_memory_message(("big", "word " * 3000)))
    full = compile(inputs(hist))
    limit = full.manifest.used - 100
    compiled = compile(inputs(hist, limit=limit))
    ids = [d.id for d in compiled.manifest.dropped]
    assert ids[0] == "message:mem1"
    assert "task.state" in compiled.manifest.by_id()
    assert all(m.id != "mem1" for m in compiled.view.messages)


def _observations_index(compiled: object) -> int:
    messages = compiled.view.messages  # type: ignore[attr-defined]
    return next(i for i, m in enumerate(messages) if m.origin == "context")


def test_the_observations_come_last_so_the_history_before_them_is_the_prefix_of_the_next_view() -> None:
    """The observations (task state, environment) change from call to call: they follow the newest
    message, and the history the previous view sent is the start of the next view, whatever changed in
    them (a new request, a changed task state)."""
    first_turn = [Message.user("the task", id="task", created_at=1.0), *turn(0)[1:]]
    first = compile(inputs(first_turn))
    assert _observations_index(first) == len(first_turn) and first.observation_place is not None
    later = [*first_turn, Message.user("one more thing", id="more", created_at=1.0)]
    changed = compile(inputs(later, pinned=SourceText(id="task.state", cls="pinned", source="task state v4",
                                                      text="Goal: something else", reason="pinned task state")))
    assert _observations_index(changed) == len(later)
    assert list(changed.view.messages[: len(first_turn)]) == list(first.view.messages[: len(first_turn)])
    assert [m.id for m in changed.view.messages if m.origin is None] == [m.id for m in later]
    # The same inputs give the same view, from a fresh compiler or a long-lived one.
    assert changed.view.to_bytes() == ContextCompiler().compile(inputs(
        later, pinned=SourceText(id="task.state", cls="pinned", source="task state v4", text="Goal: something else",
                                 reason="pinned task state"))).view.to_bytes()
    assert changed.manifest.to_dict()["used"] == changed.used


def test_after_a_compaction_the_summary_and_the_tail_stay_the_prefix() -> None:
    """After a compaction folded the request into its summary, the summary and every later message
    stay in place from call to call; only the observations after them are new."""
    summary = Message(role="user", parts=(SummaryPart("[Previous conversation summary]\nthe task"),), id="sum",
                      origin="summary", created_at=1.0)
    tail = turn(0)[1:]
    compiled = compile(inputs([summary, *tail]))
    assert _observations_index(compiled) == len(tail) + 1
    grown = compile(inputs([summary, *tail, *turn(1)[1:]]))
    assert list(grown.view.messages[: len(tail) + 1]) == list(compiled.view.messages[: len(tail) + 1])
    assert grown.view.messages[-1].origin == "context"


def test_the_budget_leaves_nothing_out_that_would_not_make_the_view_fit() -> None:
    """Over its budget by more than the observations hold, the view keeps them: leaving them out cannot
    make it fit (the controller shrinks it) and would only move the cached prefix."""
    hist = history(3)
    full = compile(inputs(hist))
    far_over = compile(inputs(hist, limit=full.used // 2))
    assert not far_over.manifest.dropped and _observations_index(far_over) == len(hist)
    just_over = compile(inputs(hist, limit=full.used - 5))
    assert [d.id for d in just_over.manifest.dropped] == ["environment"]


_KINDS_OF_MESSAGE = [
    Message.user("please fix the parser"),
    Message.user("   "),  # no words: not a request
    Message(role="user", parts=(ToolResultPart("c1", "output"),)),
    Message(role="user", parts=(TextPart("see the output"), ToolResultPart("c1", "output"))),
    Message(role="user", parts=(SummaryPart("[summary] earlier work", ("m1",)),)),
    Message(role="user", parts=(TextPart("remembered: use tabs"),), origin="memory"),
    Message.assistant("on it"),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(range(len(_KINDS_OF_MESSAGE))), max_size=12))
def test_the_current_request_is_the_latest_message_a_person_wrote(kinds: list[int]) -> None:
    history = [_KINDS_OF_MESSAGE[k] for k in kinds]
    written = [i for i, m in enumerate(history) if m.role == "user" and m.origin is None
               and not m.tool_results() and not any(isinstance(p, SummaryPart) for p in m.parts) and m.text.strip()]
    assert current_request_index(history) == (written[-1] if written else len(history))
