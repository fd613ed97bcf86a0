"""The rows a compaction summary carries whatever its cap (seed 001 §6): the last error with the exit code the
tool really reported, the failed attempts, the agent's open tasks from its own task tools, its stated
choices, and the approaches the user rejected marked rejected."""

from __future__ import annotations

from nova.context.compaction import carried_budget
from nova.context.continuity import ContinuityGuard
from nova.context.state import TaskState
from nova.context.summarize import (
    REJECTED,
    ModelSummarizer,
    SummaryRequest,
    continuity_section,
    exit_code,
    failure_code,
)
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.testing import ScriptedProvider
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


def test_the_agent_restating_the_task_is_no_choice_and_leaves_room_for_its_own() -> None:
    task = ("Prefetching without slicing would prefetch all objects (and there may be thousands of them)\n"
            "instead of the three examples that are needed.")
    history: list[Message] = [Message.user(task, id="u0")]
    echoes = [f'But wait, the user says: "{" ".join(task.split())}"', task, "instead of the three examples that are needed."]
    for i in range(20):  # more echoes than the choices carried: real choices must not give way to them
        history.append(assistant_message(f"THOUGHT: {echoes[i % 3]}", [], id=f"e{i}"))
    history.append(assistant_message("THOUGHT: I decided to keep the slice in the queryset instead of a list.",
                                     [], id="a1"))
    history.append(assistant_message('THOUGHT: I\'ll go with "qs[:3]" rather than itertools.islice.', [], id="a2"))
    decisions = continuity_section(history).split("## Decisions made", 1)[1].split("\n## ", 1)[0]
    assert "I decided to keep the slice in the queryset instead of a list. (msg a1)" in decisions
    assert "rather than itertools.islice" in decisions  # a short quotation is a name, not someone's words
    assert "Prefetching" not in decisions and "three examples" not in decisions


class _NoState:
    """A task ledger with nothing in it: only the summary's own rows are checked."""

    def load(self) -> TaskState:
        return TaskState()


class _Reviving:
    """A model summary that brings back the approach the user turned down as its decision."""

    name = "reviving"
    model_call = True  # stands for a model summary

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return ("## Decisions and rationale\n- I'll go with a `TokenStream` class instead of the regex scanner.\n"
                "## Next step\n- Write the TokenStream class.")


def test_a_model_summary_that_revives_a_rejected_approach_is_rebuilt() -> None:
    history = _run()
    carried = continuity_section(history)
    inner = _Reviving()
    guard = ContinuityGuard(state=_NoState(), inner=inner, counter=COUNTER)  # type: ignore[arg-type]
    body = guard.summarize(SummaryRequest(older=history, carried=carried, max_tokens=800))
    assert guard.last is not None and guard.last.rebuilt
    assert ("rejected approach", "I'll go with a `TokenStream` class instead of the regex scanner.") in guard.last.missing
    assert "I'll go with a `TokenStream` class" not in body.split("## Decisions and rationale", 1)[-1]
    # The model was told the facts it had to agree with, the rejection included.
    instruction = ModelSummarizer(ScriptedProvider([]), model="m").build_request(
        SummaryRequest(older=history, carried=carried, max_tokens=800)).messages[-1].text
    assert "rejected by the user (msg u2)" in instruction and "never a decision" in instruction


def test_a_refused_or_interrupted_call_is_no_failure_of_the_command() -> None:
    refused = ToolUsePart("x1", "Bash", {"command": "git push --force"})
    stopped = ToolUsePart("x2", "Bash", {"command": "rm -rf build"})
    section = continuity_section([
        Message.user("Ship it.", id="u1"),
        assistant_message("Pushing.", [refused], id="a1"),
        Message(role="user", id="r1", parts=(ToolResultPart(
            "x1", "The user doesn't want to proceed with this tool use. The tool use was rejected.", is_error=True),)),
        assistant_message("Cleaning.", [stopped], id="a2"),
        Message(role="user", id="r2", parts=(ToolResultPart("x2", "[Request interrupted by user for tool use]",
                                                            is_error=True),)),
    ])
    assert "Last failing command" not in section and "Failed attempts" not in section
    assert "rejected by the user (msg r1): the call git push --force" in section
