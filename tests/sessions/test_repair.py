"""SES-5 repair: unit cases, and the property over generated histories (record → resume → repair)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nova.messages import (
    Message,
    SummaryPart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
    person_entries,
)
from nova.sessions.repair import INTERRUPTED, RepairReport, _already_valid, _repair, repair_history
from nova.sessions.schema import BoundaryRecord
from nova.sessions.session import Session

from .conftest import assistant_call, results, user


def check_provider_ready(history: list[Message]) -> None:
    """The invariants every provider needs: alternating roles starting with user, each tool_use answered
    exactly once at the head of the next message, no orphan results, no thinking, unique call ids."""
    assert history and history[0].role == "user"
    call_ids: list[str] = []
    for i, m in enumerate(history):
        assert m.role in ("user", "assistant") and m.parts
        assert not any(isinstance(p, ThinkingPart) for p in m.parts)
        if i and not (i == 1 and m.role == "user" and m.has("summary")):  # the summary after the opening
            assert m.role != history[i - 1].role
        uses = [p.id for p in m.tool_uses()]
        call_ids.extend(uses)
        if uses:
            nxt = history[i + 1]
            got = [r.tool_use_id for r in nxt.tool_results()]
            assert got == uses
            assert all(isinstance(p, ToolResultPart) for p in nxt.parts[: len(uses)])
        if m.tool_results():
            prev_uses = [p.id for p in history[i - 1].tool_uses()] if i else []
            assert [r.tool_use_id for r in m.tool_results()] == prev_uses
    assert len(call_ids) == len(set(call_ids))


def test_valid_history_is_unchanged() -> None:
    h = [user("a", "u1"), assistant_call("a1", "c1", "c2"), results("r1", "c1", "c2"), Message.assistant("done", id="a2")]
    out, report = repair_history(h)
    assert out == h and not report.changed


def test_interrupted_call_gets_a_synthetic_error() -> None:
    out, report = repair_history([user("a", "u1"), assistant_call("a1", "c1", "c2"), results("r1", "c1")])
    assert out[-1].tool_results()[1] == ToolResultPart("c2", INTERRUPTED, is_error=True)
    assert report.synthetic_results == ["c2"]
    check_provider_ready(out)


def test_orphan_result_dropped_and_user_text_kept() -> None:
    stray = Message(role="user", parts=(ToolResultPart("ghost", "x"), TextPart("hello")), id="u2")
    out, report = repair_history([user("a", "u1"), Message.assistant("hi", id="a1"), stray])
    assert out[-1].parts == (TextPart("hello"),)
    assert report.dropped_results == ["ghost"]


def test_roles_merged_thinking_stripped_system_converted() -> None:
    h = [
        Message.assistant("first", id="a0"),
        Message.system("note", id="s1"),
        user("b", "u1"),
        assistant_call("a1", "c1", thinking=True),
        Message.assistant("more", id="a2"),
        results("r1", "c1"),
    ]
    out, report = repair_history(h)
    check_provider_ready(out)
    assert report.thinking_stripped == 1 and report.system_to_user == 1 and report.added_placeholder
    assert report.merged_messages >= 1


def test_reused_ids_are_renamed_with_their_results() -> None:
    h = [user("a", "u1"), assistant_call("a1", "c1"), results("r1", "c1"), assistant_call("a2", "c1"), results("r2", "c1")]
    out, report = repair_history(h)
    check_provider_ready(out)
    assert report.renamed_tool_uses == ["c1"]
    assert out[3].tool_uses()[0].id == "c1~2" and out[4].tool_results()[0].content == "out c1"
    assert repair_history(out)[0] == out


# -- the property --------------------------------------------------------------------------------------
@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Turns with tool calls, parallel batches, interrupted loops, lost or stray results, thinking, repeats."""
    out: list[Message] = []
    n = 0

    def mid() -> str:
        nonlocal n
        n += 1
        return f"m{n}"

    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "system", "stray"]))
        if kind == "user":
            out.append(user(draw(st.text(max_size=5)), mid()))
        elif kind == "system":
            out.append(Message.system("sys", id=mid()))
        elif kind == "stray":
            out.append(Message(role="user", parts=(ToolResultPart(f"ghost{n}", "x"),), id=mid()))
        elif kind == "assistant":
            parts: list = [TextPart(draw(st.text(max_size=5)))]
            if draw(st.booleans()):
                parts.insert(0, ThinkingPart("secret reasoning", signature="sig"))
            out.append(Message(role="assistant", parts=tuple(parts), id=mid()))
        else:
            calls = [f"c{draw(st.integers(0, 6))}" for _ in range(draw(st.integers(1, 3)))]
            out.append(assistant_call(mid(), *calls, thinking=draw(st.booleans())))
            answered = draw(st.lists(st.sampled_from(calls), max_size=len(calls) + 1))
            if answered and draw(st.booleans()):
                out.append(results(mid(), *answered))
    return out


RECORD_DRAWS = dict(history=histories(), boundary_at=st.integers(0, 10))


def check_record_resume_repair_always_yields_a_valid_history(history: list[Message], boundary_at: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        s = Session.create(home, title="p", cwd=tmp, provider="p", model="m")
        for i, m in enumerate(history):
            if i == boundary_at:
                s.record_compact_boundary(BoundaryRecord(id="", summary="so far",
                                                         covers=tuple(x.id for x in history[:i])))
            s.record_message(m)
        s.close()
        raw = (s.dir / "transcript.jsonl").read_bytes()
        assert b"secret reasoning" not in raw and b'"thinking"' not in raw
        again = Session.open(home, s.id)
        resumed = again.load_history()
        again.close()
        # The reader's scan (no second walk) decides exactly as the repair's own check.
        assert resumed == repair_history(again.transcript.read_tail().messages())[0]
        if resumed:
            check_provider_ready(resumed)
        assert repair_history(resumed)[0] == resumed  # idempotent


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**RECORD_DRAWS)
def test_record_resume_repair_always_yields_a_valid_history(**drawn: Any) -> None:
    check_record_resume_repair_always_yields_a_valid_history(**drawn)


@pytest.mark.slow  # the same property over 120 examples
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**RECORD_DRAWS)
def test_record_resume_repair_always_yields_a_valid_history_over_many_histories(**drawn: Any) -> None:
    check_record_resume_repair_always_yields_a_valid_history(**drawn)


def _damage(history: list[Message], kind: str, at: int) -> list[Message]:
    """One small defect in an otherwise valid history, near where real sessions get them."""
    if not history:
        return history
    i = at % len(history)
    m = history[i]
    out = list(history)
    if kind == "thinking":
        out[i] = m.with_parts([ThinkingPart("t", signature="s"), *m.parts])
    elif kind == "empty_text":
        out[i] = m.with_parts([*m.parts, TextPart("")])
    elif kind == "text_first":
        out[i] = m.with_parts([TextPart("x"), *m.parts])
    elif kind == "reversed":
        out[i] = m.with_parts(reversed(m.parts))
    elif kind == "dropped":
        del out[i]
    elif kind == "cut":  # the session stopped here
        del out[i:]
    elif kind == "doubled":
        out.insert(i, m)
    elif kind == "system":
        out[i] = Message(role="system", parts=m.parts, id=m.id)
    elif kind == "role_swapped":
        out[i] = Message(role="assistant" if m.role == "user" else "user", parts=m.parts, id=m.id)
    elif kind == "stray_call":
        out[i] = m.with_parts([*m.parts, ToolUsePart(id="c0", name="bash", input={})])
    elif kind == "stray_result":
        out[i] = m.with_parts([*m.parts, ToolResultPart("c0", "x")])
    elif kind == "reused_call":
        ids = [u.id for x in history for u in x.tool_uses()]
        if ids:
            again = ids[at % len(ids)]
            asked = [] if out[-1].role == "user" else [user("again", "u-again")]
            out += [*asked, assistant_call("a-again", again), results("r-again", again)]
    return out


DAMAGE = ["none", "cut", "thinking", "empty_text", "text_first", "reversed", "dropped", "doubled", "system", "role_swapped",
          "stray_call", "stray_result", "reused_call"]


SHORTCUT_DRAWS = dict(history=histories(), kind=st.sampled_from(DAMAGE), at=st.integers(0, 20))


def check_the_no_repair_shortcut_agrees_with_the_full_repair(history: list[Message], kind: str, at: int) -> None:
    """`repair_history` skips rebuilding a history that needs nothing: on a valid history with one
    defect (or none) it must answer exactly what the full repair answers, and it must recognise every
    history the full repair produces (a session repaired once is not rebuilt on every later resume)."""
    valid, _ = _repair(history)
    assert _already_valid(valid)
    damaged = _damage(valid, kind, at)
    assert repair_history(damaged) == _repair(damaged)
    assert repair_history(history) == _repair(history)


@settings(max_examples=80, deadline=None)
@given(**SHORTCUT_DRAWS)
def test_the_no_repair_shortcut_agrees_with_the_full_repair(**drawn: Any) -> None:
    check_the_no_repair_shortcut_agrees_with_the_full_repair(**drawn)


@pytest.mark.slow  # the same property over 400 examples
@settings(max_examples=400, deadline=None)
@given(**SHORTCUT_DRAWS)
def test_the_no_repair_shortcut_agrees_with_the_full_repair_over_many_histories(**drawn: Any) -> None:
    check_the_no_repair_shortcut_agrees_with_the_full_repair(**drawn)


def test_the_shortcut_refuses_each_kind_of_damage() -> None:
    valid = [user("a", "u1"), assistant_call("a1", "c1", "c2"), results("r1", "c1", "c2"), Message.assistant("ok", id="a2")]
    assert _already_valid(valid) and _already_valid([])
    damaged = [
        valid[:2],  # unanswered calls at the end
        [valid[0], valid[1], results("r1", "c2", "c1"), valid[3]],  # results out of call order
        [valid[0], valid[1], results("r1", "c1"), valid[3]],  # one result missing
        [valid[0], valid[1], results("r1", "c1", "c2", "c2"), valid[3]],  # a result twice
        [valid[1], valid[2]],  # starts with the assistant
        [valid[0], valid[0].with_parts([TextPart("b")])],  # two user messages in a row
        [valid[0], assistant_call("a1", "c1", thinking=True), results("r1", "c1")],  # thinking kept
        [valid[0], Message.system("s", id="s1")],  # a system message
        [valid[0], Message.assistant("", id="a9")],  # an empty text part
        [*valid, user("b", "u2"), assistant_call("a3", "c1"), results("r3", "c1")],  # a reused call id
        [valid[0], valid[1], Message(role="user", parts=(TextPart("x"), *results("r", "c1", "c2").parts), id="r1")],
    ]
    for history in damaged:
        assert not _already_valid(history), history
        assert _repair(history) != (history, RepairReport()), history  # the full repair does change it


def test_a_merge_keeps_each_text_with_who_wrote_it_and_its_own_id() -> None:
    # How a Claude Code session starts: the harness's caveat (isMeta), the local command's record, then
    # the request; and later, after an interrupted tool call, the person's correction.
    history = [
        Message.user("Caveat: the messages below were generated by local commands.", id="m1",
                     metadata={"is_meta": True}),
        Message(role="user", id="m2", parts=(TextPart("<local-command-stdout></local-command-stdout>", harness=True),)),
        Message.user("Review the metrics sync.", id="m3"),
        assistant_call("a1", "c1"),
        results("r1", "c1"),
        Message(role="user", id="m4", parts=(TextPart("[Request interrupted by user]", harness=True),)),
        Message.user("no, it's not phase 1", id="m5"),
    ]
    repaired, report = repair_history(history)
    assert report.merged_messages == 4 and [m.role for m in repaired] == ["user", "assistant", "user"]
    assert "is_meta" not in repaired[0].metadata  # moved onto the caveat's own part
    assert [e for m in repaired for e in person_entries(m)] == [("m3", "Review the metrics sync."),
                                                               ("m5", "no, it's not phase 1")]
    assert repair_history(repaired)[0] == repaired  # and a repaired history needs nothing more


def _summary(id: str) -> Message:
    return Message(role="user", parts=(SummaryPart("[Previous conversation summary]\n- fixed the parser"),),
                   id=id, origin="summary")


def test_a_summary_right_after_the_opening_stays_its_own_message() -> None:
    # How a compaction that keeps the opening leaves the view: resumed, the opening must still be a
    # message of the person's words alone, so the next compaction keeps it in place as well.
    history = [user("Fix the parser.", "u1"), _summary("s1"), assistant_call("a1", "c1"), results("r1", "c1"),
               Message.assistant("done", id="a2")]
    out, report = repair_history(history)
    assert out == history and not report.changed
    assert _already_valid(history)
    check_provider_ready(out)


def test_two_user_messages_are_merged_anywhere_else() -> None:
    # A summary that opens the history takes the next user message into it, as any two user messages do;
    # so does a summary further in, and user text after the kept opening and its summary.
    for history in (
        [_summary("s1"), user("go on", "u2"), Message.assistant("ok", id="a1")],
        [user("Fix the parser.", "u1"), _summary("s1"), user("and the lexer", "u2"), Message.assistant("ok", id="a1")],
        [user("a", "u1"), Message.assistant("ok", id="a1"), user("b", "u2"), _summary("s2")],
    ):
        assert not _already_valid(history)
        out, report = repair_history(history)
        assert report.merged_messages == 1
        check_provider_ready(out)


def test_a_resumed_session_keeps_the_opening_apart_from_the_summary(tmp_path: Path) -> None:
    opening = user("Fix the parser.", "u1")
    s = Session.create(tmp_path, title="p", cwd=str(tmp_path), provider="p", model="m")
    for m in (opening, assistant_call("a1", "c1"), results("r1", "c1")):
        s.record_message(m)
    s.record_compact_boundary(BoundaryRecord(id="b1", summary="- fixed the parser", covers=("a1", "r1"),
                                             messages=(opening, _summary("b1.summary"))))
    s.record_message(Message.assistant("done", id="a2"))
    s.close()
    again = Session.open(tmp_path, s.id)
    resumed = again.load_history()
    again.close()
    assert [m.id for m in resumed] == ["u1", "b1.summary", "a2"]
    assert resumed[0].parts == opening.parts and not again.last_repair.changed
