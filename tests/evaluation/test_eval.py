"""`nova eval`: each EVAL-1 metric on a hand-made session whose answer is known, the case file, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.cases import CaseError, EvalCase, load_cases
from nova.evaluation.metrics import provenance_coverage
from nova.evaluation.run import run_case
from nova.messages import Message, SummaryPart
from nova.providers.pricing import model_info
from nova.sessions.importers import read_session_file
from nova.tokens import count_message
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)
TASK = "Fix the bug in pkg/parser.py. Do not change the public API."
ERROR = "AssertionError: parse failed on line 3"
# Large outputs, so the simulated OpenAI cache (reads from 1,024 tokens) has prefixes to read.
NOISE = " ".join(f"row{i} value{i * 7}" for i in range(900))


def _step(thought: str, command: str, output: str, code: int = 0) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": f"THOUGHT: {thought}\n\n```bash\n{command}\n```"},
            {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"}]


def _session(tmp_path: Path) -> Path:
    messages = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": TASK},
        *_step("Write the fix.", "printf 'fixed = True\\n' > pkg/parser.py", "done"),
        *_step("Look at the data.", "cat data.txt", NOISE),
        *_step("Run the tests.", "python -m pytest tests", f"Traceback (most recent call last):\n{ERROR}", code=1),
        *_step("Finish.", "echo COMPLETE", "COMPLETE"),
    ]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {}, "messages": messages, "trajectory_format": "mini-swe-agent-1"}))
    return path


def _case(tmp_path: Path, **extra: object) -> Path:
    data = {"name": "parser", "session": "run.traj.json", "window": 128000, "policies": ["naive"],
            "provider_cache": "openai", "price": "gpt-5",
            "evidence": ["pkg/parser.py", ERROR, "nowhere/in/this/run.py"],
            "constraints": ["Do not change the public API.", "Never push to main."], **extra}
    _session(tmp_path)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(data))
    return path


def test_each_metric_has_its_known_answer_on_a_hand_made_run(tmp_path: Path) -> None:
    (case,) = load_cases(_case(tmp_path))
    session = read_session_file(case.session)
    (result,) = run_case(case, session, counter=COUNTER)
    m = result.metrics
    # Two of three evidence items are in the run; one constraint of two was ever said.
    assert (m["evidence_recall"].value, m["evidence_recall"].unit) == (pytest.approx(2 / 3), "evidence items")
    assert (m["constraint_retention"].value, m["constraint_retention"].unit) == (0.5, "constraints")
    # Precision: the task (the constraint), the call writing pkg/parser.py and the failing output hold
    # required items; the rest (the noise dump among them) does not.
    view = result.report.final_view
    total = sum(count_message(x, COUNTER) for x in view)
    relevant = [x for x in view if TASK in x.text or "pkg/parser.py" in str(x.parts) or ERROR in str(x.parts)]
    assert len(relevant) == 3
    part = sum(count_message(x, COUNTER) for x in relevant)
    assert (m["context_precision"].part, m["context_precision"].whole, m["context_precision"].unit) == (
        part, total, "tokens")
    assert (m["noise_rate"].part, m["noise_rate"].whole) == (total - part, total)
    assert m["provenance_coverage"].value == 1.0  # naive sends the recording itself
    # OpenAI's cache reads the previous call's whole request, from 1,024 tokens, in 128-token steps.
    sent = [c.input_tokens for c in result.report.per_call]
    reads = [0] + [t // 128 * 128 if t >= 1024 else 0 for t in sent[:-1]]
    assert sum(reads) > 0
    assert (m["cache_hit_rate"].part, m["cache_hit_rate"].whole) == (sum(reads), sum(sent))
    info = model_info("gpt-5")
    assert info is not None
    cost = ((sum(sent) - sum(reads)) * info.input + sum(reads) * info.cache_read) / 1_000_000
    assert m["cost_per_session"].value == pytest.approx(cost)
    assert m["cost_per_call"].value == pytest.approx(cost / len(sent))
    assert m["cost_per_session"].unit == "USD per session" and m["cost_per_call"].unit == "USD per call"


def test_provenance_counts_recorded_messages_and_summaries_naming_what_they_cover() -> None:
    recorded = Message.user("a recorded message " * 20, id="r1")
    summary = Message(role="user", parts=(SummaryPart("what happened " * 10, covers=("r0",)),), id="s1",
                      origin="summary")
    stray = Message.user("an insert that points nowhere " * 5, id="x1", origin="summary")
    sizes = [count_message(x, COUNTER) for x in (recorded, summary, stray)]
    ratio = provenance_coverage([recorded, summary, stray], {"r1"}, COUNTER)
    assert (ratio.part, ratio.whole, ratio.unit) == (sizes[0] + sizes[1], sum(sizes), "tokens")


def test_derived_items_are_the_user_words_the_modified_path_and_the_last_failure(tmp_path: Path) -> None:
    (case,) = load_cases(_case(tmp_path, evidence=None, constraints=None))
    assert case.derive
    (result,) = run_case(case, read_session_file(case.session), counter=COUNTER)
    assert result.constraints == (TASK,)
    assert result.evidence == ("pkg/parser.py", "python -m pytest tests", ERROR)
    assert result.metrics["evidence_recall"].value == 1.0


def test_a_yaml_suite_and_its_mistakes(tmp_path: Path) -> None:
    _session(tmp_path)
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases:\n  - session: run.traj.json\n    policies: [nova, truncate]\n    window: 32000\n"
                     "  - {session: run.traj.json, evidence: [pkg/parser.py]}\n")
    first, second = load_cases(suite)
    assert isinstance(first, EvalCase) and first.policies == ("nova", "truncate") and first.derive
    assert first.session == tmp_path / "run.traj.json" and first.name == "run.traj.json"
    assert second.evidence == ("pkg/parser.py",) and not second.derive
    for text, message in (("session: run.traj.json\npolicies: [greedy]\n", "policies"),
                          ("policies: [nova]\n", "`session`"), ("session: x\nwindw: 3\n", "unknown key")):
        suite.write_text(text)
        with pytest.raises(CaseError, match=message):
            load_cases(suite)


def test_a_session_given_for_a_case_file_is_named_as_one(tmp_path: Path) -> None:
    """A JSONL session was "not valid JSON: Extra data", a list of messages "case 1: a case is a mapping"."""
    trajectory = _session(tmp_path)
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("".join(json.dumps(r) + "\n" for r in [
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "fix it"}]}}]))
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "done"}]))
    for path in (trajectory, rollout, chat):
        with pytest.raises(CaseError, match=rf"{path.name} is a recorded session \(.+\), not a case file: "
                                            r"replay it with `nova replay"):
            load_cases(path)
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    with pytest.raises(CaseError, match="a case is a mapping"):  # neither: the case file's own error
        load_cases(other)


def test_nova_eval_prints_the_metrics_with_units_and_json(tmp_path: Path, nova_home: Path) -> None:
    case = _case(tmp_path, policies=["naive", "nova"])
    result = CliRunner().invoke(app, ["eval", str(case)])
    assert result.exit_code == 0, result.output
    assert "recall of required evidence" in result.output and "(2 of 3 evidence items)" in result.output
    assert "missing evidence: nowhere/in/this/run.py" in result.output
    assert "USD per call" in result.output
    out = CliRunner().invoke(app, ["eval", str(case), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output.strip().splitlines()[-1])
    assert [r["policy"] for r in data["results"]] == ["naive", "nova"]
    assert data["results"][0]["metrics"]["constraint_retention"] == {"value": 0.5, "part": 1, "of": 2,
                                                                     "unit": "constraints"}
    assert data["results"][0]["missing_constraints"] == ["Never push to main."]
    bad = CliRunner().invoke(app, ["eval", str(_case(tmp_path, price="no-such-model"))])
    assert bad.exit_code == 2 and "no price" in bad.output


def test_recorded_comes_first_whatever_order_the_case_names_it_in(tmp_path: Path) -> None:
    (case,) = load_cases(_case(tmp_path, policies=["nova", "truncate", "recorded"]))
    results = run_case(case, read_session_file(case.session), counter=COUNTER)
    assert [r.policy for r in results] == ["recorded", "nova", "truncate"]
    from nova.evaluation.report import eval_report_html

    page = eval_report_html(results, source="case.json")
    assert page.index(">recorded<") < page.index(">nova<") < page.index(">truncate<")


def test_eval_names_the_window_each_policy_really_ran_at(tmp_path: Path, nova_home: Path) -> None:
    """A Claude Code session lacks its fixed prompt: at 32k the stand-in leaves no room, so each policy is
    replayed at the smallest window it fits in (`nova replay` says so); `nova eval` says the same of each
    row, never that all three ran at the 32,000 the case asked for."""
    from nova.testing import shared_data_dir

    session = shared_data_dir() / "sessions" / "codemie" / "claude-code" / "session-3fe1b6bc.jsonl"
    if not session.is_file():
        pytest.skip(f"no shared session data at {session} (set NOVA_SHARED_DATA)")
    case = tmp_path / "cases.yaml"
    case.write_text(f"cases:\n  - session: {session}\n    window: 32000\n    policies: [nova, truncate]\n")
    out = CliRunner().invoke(app, ["eval", str(case), "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output.strip().splitlines()[-1])["results"]
    replayed = {r["policy"]: replay_window for r in rows for replay_window in [r["window"]]}
    assert all(r["window_raised_from"] == 32000 and r["window"] > 32000 for r in rows), rows
    # The first 25 % step that holds the 31k stand-in and the first messages: the stand-in is in the
    # provider's units, not scaled by how far the counter is off on the messages (nova ran at 62,503).
    assert set(replayed.values()) == {40_001}, replayed
    text = CliRunner().invoke(app, ["eval", str(case)])
    assert text.exit_code == 0, text.output
    for policy, window in replayed.items():
        assert f"policy={policy} window={window:,} (raised from 32,000:" in text.output, text.output
