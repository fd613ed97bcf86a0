"""The parts every adapter shares, without a framework: the read-back tool's fence, the mirror taking a
history that no longer continues, rendering a rewritten message, and the extractive summarizer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nova.context.summarize import SummaryRequest
from nova.integrations._engine import ContextEngine
from nova.integrations._mirror import Mirror, shared_prefix
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.session import Session


class _Codec:
    """Framework items that are plain strings: "u:…" a user's text, "c:ID" a call, "r:ID:…" its result."""

    def to_nova(self, items: Sequence[str]) -> list[tuple[Message, tuple[str, ...]]]:
        out: list[tuple[Message, tuple[str, ...]]] = []
        for item in items:
            kind, _, rest = item.partition(":")
            if kind == "u":
                out.append((Message.user(rest), (item,)))
            elif kind == "c":
                out.append((Message(role="assistant", parts=(ToolUsePart(rest, "fetch", {}),)), (item,)))
            else:
                call, _, content = rest.partition(":")
                out.append((Message(role="user", parts=(ToolResultPart(call, content),)), (item,)))
        return out

    def rewrite(self, items: tuple[str, ...], message: Message) -> list[str]:
        assert len(items) == 1
        results = message.tool_results()
        return [f"r:{results[0].tool_use_id}:{results[0].content}"] if results else [f"u:{message.text}"]

    def insert(self, message: Message) -> list[str]:
        return [f"u:{message.text}"]

    def same(self, a: str, b: str) -> bool:
        return a == b


def _turn(turn: int, request: str) -> list[str]:
    """A user's request, then four calls whose outputs are a few hundred tokens each."""
    items = [f"u:{request}"]
    for step in range(4):
        items += [f"c:{turn}-{step}", f"r:{turn}-{step}:" + f"line {step} of turn {turn} " * 60]
    return items


def _session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "home", provider="langchain", model="")


def test_the_read_back_tool_reads_only_this_sessions_saved_files(tmp_path: Path) -> None:
    session = _session(tmp_path)
    engine = ContextEngine(framework="langchain", window=8_000, session=session)
    saved = session.dir / "tool-results" / "call-1.txt"
    saved.write_text("first line\nsecond line\n", encoding="utf-8")
    assert "second line" in engine.read_saved_output(str(saved), offset=2, limit=1)
    outside = tmp_path / "secret.txt"
    outside.write_text("do not show\n", encoding="utf-8")
    refused = engine.read_saved_output(str(outside))
    assert refused.startswith("Error:") and "do not show" not in refused
    sneaky = engine.read_saved_output(str(session.dir / ".." / ".." / ".." / "secret.txt"))
    assert sneaky.startswith("Error:")
    session.close()
    assert ContextEngine(framework="langchain", window=8_000).read_saved_output("x").startswith("Error:")


def test_a_large_output_is_spilled_and_the_view_carries_its_placeholder(tmp_path: Path) -> None:
    session = _session(tmp_path)
    engine = ContextEngine(framework="langchain", window=8_000, session=session)
    mirror: Mirror[str] = Mirror(engine, _Codec())
    history = ["u:read it", "c:1", "r:1:" + "x" * 20_000]
    mirror.follow(history)
    view = mirror.render(engine.prepare(system="", tools=[]).messages)
    assert view[:2] == history[:2]
    assert view[2].startswith("r:1:<persisted-output>") and len(view[2]) < 5_000
    assert engine.stats.spills == 1
    session.close()


def test_a_history_that_no_longer_continues_is_taken_in_anew(tmp_path: Path) -> None:
    engine = ContextEngine(framework="langchain", window=8_000)
    mirror: Mirror[str] = Mirror(engine, _Codec())
    mirror.follow(["u:first", "c:1", "r:1:ok"])
    mirror.follow(["u:another conversation"])
    assert [m.text for m in engine.history] == ["another conversation"]
    assert mirror.render(engine.prepare(system="", tools=[]).messages) == ["u:another conversation"]


def test_the_extractive_summarizer_compacts_without_a_model_and_keeps_the_users_words(tmp_path: Path) -> None:
    session = _session(tmp_path)
    engine = ContextEngine(framework="langchain", window=8_000, session=session)
    mirror: Mirror[str] = Mirror(engine, _Codec())
    history: list[str] = []
    for turn in range(12):
        history += _turn(turn, f"request {turn}: keep the port 80{turn} closed")
        mirror.follow(history)
        view = mirror.render(engine.prepare(system="", tools=[]).messages)
        text = "\n".join(view)
        assert all(f"request {t}: keep the port 80{t} closed" in text for t in range(turn + 1))
    assert engine.stats.compactions >= 1
    session.close()


_items = st.lists(st.sampled_from(["a", "b", "c"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(_items, _items)
def test_the_shared_prefix_is_the_longest_common_start(seen: list[str], items: list[str]) -> None:
    expected = 0
    while expected < min(len(seen), len(items)) and seen[expected] == items[expected]:
        expected += 1
    assert shared_prefix(seen, items, lambda a, b: a == b) == expected


def test_a_rewritten_message_renders_with_the_new_content_and_the_rest_as_they_were() -> None:
    engine = ContextEngine(framework="langchain", window=8_000)
    mirror: Mirror[str] = Mirror(engine, _Codec())
    mirror.follow(["u:go", "c:1", "r:1:long output"])
    snipped = [engine.history[0], engine.history[1],
               engine.history[2].with_parts([ToolResultPart("1", "[snipped]")])]
    assert mirror.render(snipped) == ["u:go", "c:1", "r:1:[snipped]"]
    assert mirror.render([Message(role="user", parts=(TextPart("a summary"),)), *snipped[1:]]) == \
        ["u:a summary", "c:1", "r:1:[snipped]"]


class _RecordingSummarizer:
    """Writes a plain summary and keeps every request it was given."""

    name = "recording"
    model_call = True  # stands for a model summary

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return "The user asked for the logs; they were read."


def test_a_summary_is_asked_with_the_view_the_model_was_sent(tmp_path: Path) -> None:
    """The live agent's pipeline: the summarizer is handed the compiled view (its pinned task state, its
    instructions), not the bare history, so a model summary reads the prefix the last call cached."""
    session = _session(tmp_path)
    summarizer = _RecordingSummarizer()
    engine = ContextEngine(framework="langchain", window=8_000, session=session, summarizer=summarizer)
    engine.command("/goal read every log")
    mirror: Mirror[str] = Mirror(engine, _Codec())
    history: list[str] = []
    for turn in range(12):
        history += _turn(turn, f"request {turn}")
        mirror.follow(history)
        engine.prepare(system="You read logs.", tools=[])
    assert summarizer.requests, "the run never compacted"
    request = summarizer.requests[0]
    assert request.system == "You read logs."
    assert "Goal: read every log" in request.context[-1].text  # the pinned block, last as it was sent
    assert engine.manifest is not None
    assert any(s.source == "langchain: instructions" for s in engine.manifest.segments)
    session.close()


def test_rules_in_a_users_request_are_not_queued_for_a_confirmation_nobody_can_give() -> None:
    engine = ContextEngine(framework="langchain", window=8_000)
    mirror: Mirror[str] = Mirror(engine, _Codec())
    mirror.follow(["u:Never push to main. Always run the tests before you commit."])
    engine.prepare(system="", tools=[])
    assert engine.task_state.pending == () and engine.task_state.empty
