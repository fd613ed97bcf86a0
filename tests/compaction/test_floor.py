"""The continuity floor of a compaction at small windows: what it carries whatever the summary cap, how
far it may leave the view over half the threshold, and what the manifest says about it."""

from __future__ import annotations

from nova.context.budget import ContextBudget
from nova.context.compaction import compact
from nova.context.compiler import cut_records
from nova.context.summarize import ExtractiveSummarizer, continuity_section
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.settings import CompactionConfig
from nova.tokens import count_message
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

from .helpers import exchange, filler

COUNTER = HeuristicCounter(CL100K_PROFILE)
BUDGET_8K = ContextBudget.derive(CompactionConfig(), 8_000)
# A long shell command that fails: a summary that clips commands loses it.
FAILING = ("cd /testbed && python - <<'EOF'\nimport os, sys\nsys.path.insert(0, 'src')\n"
           + "".join(f"assert check_{i}(value_{i}) == expected_{i}, 'case {i}'\n" for i in range(14)) + "EOF")
ERROR = "AssertionError: case 3 expected 7 got 9"


def _failing_run() -> list[Message]:
    """A task, a file written through the shell, a failing command, then plenty of later work."""
    write = ToolUsePart(id="toolu_w", name="bash", input={"command": "cat > src/pkg/fix_parser.py <<'EOF'\nx = 1\nEOF"})
    fail = ToolUsePart(id="toolu_f", name="bash", input={"command": FAILING})
    out: list[Message] = [
        Message.user("Fix the parser bug in src/pkg/parser.py without changing its public API."),
        assistant_message("I will write the fix first. Let me decide the approach because it matters.", [write]),
        Message(role="user", parts=(ToolResultPart(write.id, "<returncode>0</returncode>"),)),
        assistant_message("Now I should run the checks. I will read the failures carefully instead.", [fail]),
        Message(role="user", parts=(ToolResultPart(fail.id, f"<returncode>1</returncode>\n<output>\n"
                                                            f"Traceback (most recent call last):\n{ERROR}\n</output>"),)),
    ]
    for i in range(12):
        out += exchange(i, output_chars=1200)
    return out


def test_a_small_window_summary_still_carries_the_modified_file_and_the_whole_failing_command() -> None:
    assert BUDGET_8K.summary_cap <= 256  # the summary body alone has room for little
    outcome = compact(_failing_run(), summarizer=ExtractiveSummarizer(COUNTER), budget=BUDGET_8K, counter=COUNTER)
    assert outcome.ok, outcome.reason
    text = outcome.messages[1].text
    assert "src/pkg/fix_parser.py" in text
    assert FAILING in text and ERROR in text


def test_the_continuity_section_names_files_and_the_last_failure_exactly() -> None:
    section = continuity_section(_failing_run()[:5])
    assert "## Files modified\n- src/pkg/fix_parser.py" in section
    assert f"`{FAILING}` exited 1" in section and ERROR in section
    assert continuity_section([Message.user("hello")]) == ""


def test_a_task_statement_over_half_the_threshold_ends_the_view_at_the_floor_and_says_so() -> None:
    task = "Implement the feature described below.\n" + filler(14_000, 1)  # about 3,100 tokens
    history = [Message.user(task), *[m for i in range(14) for m in exchange(i, output_chars=1600)]]
    outcome = compact(history, summarizer=ExtractiveSummarizer(COUNTER), budget=BUDGET_8K, counter=COUNTER)
    assert outcome.ok, outcome.reason
    sized = outcome.messages[0].metadata["compaction"]
    view = sum(count_message(m, COUNTER) for m in outcome.messages)
    assert sized["target"] == BUDGET_8K.post_compaction_target < sized["floor"]
    assert sized["bound"] == "the continuity floor" and sized["view"] == view <= sized["floor"]
    assert task in outcome.messages[0].text  # the task statement fits the floor whole
    assert "users_cut" not in sized


def test_user_messages_the_summary_cannot_hold_are_recorded_in_the_manifest() -> None:
    task = "Port the module to the new API.\n" + filler(18_500, 2)  # about 4,100 tokens
    later = [Message.user(f"Also keep note {i}: " + filler(1_400, 10 + i)) for i in range(4)]
    history: list[Message] = [Message.user(task)]
    for i, note in enumerate(later):
        history += [*exchange(2 * i, output_chars=1600), note, *exchange(2 * i + 1, output_chars=1600)]
    history += [m for i in range(10, 16) for m in exchange(i, output_chars=1600)]
    outcome = compact(history, summarizer=ExtractiveSummarizer(COUNTER), budget=BUDGET_8K, counter=COUNTER)
    assert outcome.ok, outcome.reason
    left = outcome.messages[0].metadata["compaction"]["users_cut"]
    left_ids = {i for entry in left for i in entry["ids"]}
    assert left_ids and left_ids <= {m.id for m in later}
    kept_whole = [m for m in later if m.text in outcome.messages[0].text]
    assert {m.id for m in later} == left_ids | {m.id for m in kept_whole}
    dropped = {d.id: d.reason for d in cut_records(outcome.messages)}
    summary = outcome.messages[0].text
    shortened = 0
    for mid in left_ids:
        assert "not in the compaction summary whole" in dropped[f"cut:{mid}"]
        # Shortened with its head kept and a pointer to the rest, or — with no room even for that — named.
        if "shortened, its head kept" in dropped[f"cut:{mid}"]:
            note = next(m.text for m in later if m.id == mid)
            assert note[:40] in summary and f"more chars in msg {mid} of the transcript" in summary
            shortened += 1
        else:
            assert "no room left for it" in dropped[f"cut:{mid}"] and f"(user message {mid}," in summary
    assert shortened  # the oldest are shortened before any is only named


def test_the_continuity_section_carries_every_stated_choice_but_not_the_narration() -> None:
    # A model narrates its next step many times per turn; before, those sentences shared one short list
    # with the choices it made, and an early choice was gone after a few compactions.
    choice = "I decided to keep the parser's cache instead of rebuilding it, because rebuilds lose state."
    history = [Message.user("Fix it."), assistant_message(f"Understood. {choice}", [])]
    for i in range(30):
        history.append(assistant_message(f"Let me look at module_{i}.py because it may hold the bug.", []))
        history.append(Message.user(f"ok {i}"))
    section = continuity_section(history)
    assert f"## Decisions made\n- {choice}" in section
    assert "module_3.py" not in section


def test_a_cut_keeps_the_first_line_of_its_tail_whole() -> None:
    from nova.context.oversize import CUT_MARK, cut_middle

    verdict = "=" * 29 + " 1 failed, 7 warnings in 0.31s " + "=" * 30
    lines = [f"tests/test_case_{i}.py::test_{i} PASSED with a long line of pytest output {i * 7}" for i in range(300)]
    text = "\n".join([*lines, verdict, "</output>"])
    for keep in range(200, 1_200, 37):  # the cut lands at every point of a line, the verdict's among them
        result = cut_middle(text, keep_tokens=keep, counter=COUNTER, where="Full output: x.txt")
        tail = result.split(CUT_MARK, 1)[1].split("]\n", 1)[1]
        start = len(text) - len(tail)
        assert text.endswith(tail) and text[start - 1] == "\n", (keep, tail[:80])
        assert COUNTER.count(result) <= keep
    assert verdict in cut_middle(text, keep_tokens=120, counter=COUNTER, where="Full output: x.txt")


def test_a_long_session_at_a_large_window_names_every_file_it_modified() -> None:
    # 120 files written, more than the 40 a small window's summary names: at 200k there is room for all.
    out: list[Message] = [Message.user("Port every module of the package to the new API.")]
    for i in range(120):
        write = ToolUsePart(f"w{i}", "write_file", {"path": f"src/pkg/module_{i:03d}.py", "content": "x = 1\n" * 40})
        out += [assistant_message(f"Porting module {i}.", [write]),
                Message(role="user", parts=(ToolResultPart(write.id, "written"),))]
    budget = ContextBudget.derive(CompactionConfig(), 200_000)
    outcome = compact(out, summarizer=ExtractiveSummarizer(COUNTER), budget=budget, counter=COUNTER, forced=True)
    assert outcome.ok, outcome.reason
    view = "\n".join(m.text for m in outcome.messages) + "\n".join(
        str(p.input) for m in outcome.messages for p in m.tool_uses())
    assert all(f"src/pkg/module_{i:03d}.py" in view for i in range(120))
    # A small window still names the newest 40 and counts the rest.
    small = compact(out, summarizer=ExtractiveSummarizer(COUNTER), budget=BUDGET_8K, counter=COUNTER, forced=True)
    assert small.ok and "more in the transcript" in small.messages[1].text


def test_the_choices_of_a_long_run_stay_while_the_summary_has_room_for_them() -> None:
    # 30 stated choices: more than the 16 a summary once kept whatever its room; at 32k all fit, at 8k the
    # budget makes the oldest give way (the summary says how many).
    out: list[Message] = [Message.user("Speed up the importer without changing its output.")]
    for i in range(30):
        out += [Message.assistant(f"I decided to cache parser_{i} instead of re-reading it, because step {i} "
                                  "reads the same file twice."), Message.user(f"ok {i}")]
    for i in range(30):  # later work, so the choices are all in the folded part
        out += exchange(i, output_chars=3000)
    wide = compact(out, summarizer=ExtractiveSummarizer(COUNTER), budget=ContextBudget.derive(CompactionConfig(), 32_000),
                   counter=COUNTER, forced=True)
    assert wide.ok, wide.reason
    text = "\n".join(m.text for m in wide.messages)
    assert all(f"I decided to cache parser_{i} instead" in text for i in range(30))
    narrow = continuity_section(out, budget=400, counter=COUNTER)
    assert "earlier ones in the transcript" in narrow
