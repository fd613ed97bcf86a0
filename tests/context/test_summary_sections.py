"""The rows a compaction summary carries whatever its cap (seed 001 §6): the last error with the exit code the
tool really reported, the failed attempts, the agent's open tasks from its own task tools, its stated
choices, and the approaches the user rejected marked rejected."""

from __future__ import annotations

from nova.context.compaction import carried_budget
from nova.context.summarize import REJECTED, continuity_section, exit_code, failure_code
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)


def test_the_exit_code_is_read_where_the_tool_wrote_it() -> None:
    long_output = "Ran 2 tests\n" + "line of output\n" * 200 + "FAILED (failures=1)\n[exit code: 1]"
    assert exit_code(ToolResultPart("t", long_output, is_error=True)) == 1  # Nova's bash: at the end
    assert exit_code(ToolResultPart("t", "<returncode>2</returncode>\n<output>x</output>")) == 2  # mini-swe-agent
    assert exit_code(ToolResultPart("t", "Exit code 127\nbash: nope: command not found", is_error=True)) == 127
    assert failure_code(ToolResultPart("t", long_output, is_error=True)) == 1
    assert failure_code(ToolResultPart("t", "[exit code: 0]")) is None
    # An error that reports no code is "failed", never a made-up -1 exit.
    assert failure_code(ToolResultPart("t", "File does not exist.", is_error=True)) == -1
    section = continuity_section([
        assistant_message("Check.", [ToolUsePart("r1", "Read", {"file_path": "/repo/missing.py"})]),
        Message(role="user", parts=(ToolResultPart("r1", "File does not exist.", is_error=True),))])
    assert "failed (no exit code reported)" in section and "exited -1" not in section


def _run() -> list[Message]:
    todo = ToolUsePart("t1", "TodoWrite", {"todos": [
        {"content": "Parse the header", "status": "completed"},
        {"content": "Handle empty input in parse_tokens", "status": "in_progress"},
        {"content": "Document the `strict` flag", "status": "pending"}]})
    plan = ToolUsePart("t2", "TaskCreate", {"subject": "Benchmark the new parser"})
    first = ToolUsePart("b1", "bash", {"command": "pytest tests/test_parse.py -x"})
    second = ToolUsePart("b2", "bash", {"command": "python -m parser.check"})
    return [
        Message.user("Fix the parser.", id="u1"),
        assistant_message("I'll go with a `TokenStream` class instead of the regex scanner.", [todo, plan], id="a1"),
        Message(role="user", id="r1", parts=(ToolResultPart("t1", "Todos have been modified successfully."),
                                             ToolResultPart("t2", "Task #3 created successfully"))),
        Message.user("no, TokenStream is too heavy; keep the regex", id="u2"),
        assistant_message("Understood. I decided to keep the regex scanner rather than a new class.", [first],
                          id="a2"),
        Message(role="user", id="r2", parts=(ToolResultPart("b1", "E   AssertionError: empty input\n[exit code: 1]",
                                                            is_error=True),)),
        assistant_message("Let me check the checker.", [second], id="a3"),
        Message(role="user", id="r3", parts=(ToolResultPart("b2", "ChecksumError: shard 2\n[exit code: 3]",
                                                            is_error=True),)),
    ]


def test_the_floor_carries_tasks_rejections_choices_and_failures() -> None:
    section = continuity_section(_run())
    assert "[in_progress] Handle empty input in parse_tokens (msg a1)" in section
    assert "[pending] Document the `strict` flag" in section and "Parse the header" not in section
    assert "[pending] #3 Benchmark the new parser (msg r1)" in section
    rejected = section.split(f"## {REJECTED}", 1)[1].split("\n## ", 1)[0]
    assert "rejected by the user (msg u2): I'll go with a `TokenStream` class" in rejected
    decisions = section.split("## Decisions made", 1)[1].split("\n## ", 1)[0]
    assert "I decided to keep the regex scanner rather than a new class." in decisions
    assert "TokenStream" not in decisions and "Let me check the checker." not in section
    assert "`pytest tests/test_parse.py -x` exited 1 (msg r2): E   AssertionError: empty input" in section
    last = section.split("## Last failing command", 1)[1]
    assert "`python -m parser.check` exited 3 (msg r3)" in last and "ChecksumError: shard 2" in last


def test_a_tight_budget_trims_the_oldest_rows_but_never_a_modified_file() -> None:
    history: list[Message] = [Message.user("Port it.", id="u0")]
    for i in range(30):
        write = ToolUsePart(f"w{i}", "bash", {"command": f"sed -i 's/old/new/' src/pkg/module_{i}.py"})
        history.append(assistant_message(f"I decided to port module_{i} first instead of the tests, because {i}.",
                                         [write], id=f"a{i}"))
        history.append(Message(role="user", id=f"r{i}", parts=(ToolResultPart(f"w{i}", "[exit code: 0]"),)))
    whole = continuity_section(history)
    tight = continuity_section(history, budget=carried_budget(4_000), counter=COUNTER)
    assert COUNTER.count(tight) < COUNTER.count(whole)
    assert all(f"src/pkg/module_{i}.py" in tight for i in range(30))
    assert "by `sed -i" in whole and "I decided to port module_29 first" in whole
    assert carried_budget(4_000) == 400 and carried_budget(176_000) == 35_200
