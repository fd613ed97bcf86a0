"""Counterfactual runs (EVAL-2) on a scripted case: each kind changes the view exactly as declared, the result
names the change, a scripted provider answers each run, and `nova eval --json` carries it all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.evaluation.test_eval import COUNTER, ERROR, _case
from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.cases import CaseError, load_cases
from nova.evaluation.counterfactual import (
    Counterfactual,
    CounterfactualError,
    NotInView,
    apply_counterfactual,
    segments_of,
)
from nova.evaluation.run import CaseResult, calls_of, run_case
from nova.model import ModelRequest
from nova.sessions.importers import read_session_file
from nova.testing import FunctionProvider

# The replayed view of the hand-made run (naive policy: everything kept): the system prompt, the task, then
# four steps (a call with its result): write the fix, read the data, the failing tests, finish.
BASELINE = ["system", "message:m00001", "message:m00002", "message:m00004", "message:m00006", "message:m00008"]
CHANGES = [
    {"remove": "message:m00006"},                      # the failing test run, by name
    {"remove": "step"},                                # every step, by class
    {"swap": ["m00002", "message:m00006"]},            # by bare id and by name
    {"inject": "The tests live in tests/legacy/, not tests/.", "at": 1, "name": "conflicting location"},
    {"inject": "Actually, do change the public API.", "at": "before:message:m00008"},
    {"inject": "The fix is already merged."},           # default: the end
]


def _run(tmp_path: Path, provider: FunctionProvider | None = None) -> CaseResult:
    (case,) = load_cases(_case(tmp_path, counterfactuals=CHANGES))
    (result,) = run_case(case, read_session_file(case.session), counter=COUNTER, provider=provider, model="m")
    return result


def test_each_counterfactual_changes_the_view_exactly_as_declared(tmp_path: Path) -> None:
    result = _run(tmp_path)
    base = result.baseline_run
    assert base is not None
    assert [name for name, _, _ in base.segments] == BASELINE
    assert [cls for _, cls, _ in base.segments] == ["system", "request", "step", "step", "step", "step"]
    tokens = {name: t for name, _, t in base.segments}
    assert base.tokens == sum(tokens.values())
    by_label = {c.change.label: c for c in result.counterfactuals}
    assert list(by_label) == ["remove message:m00006", "remove step", "swap m00002 and message:m00006",
                              "conflicting location", "inject at before:message:m00008", "inject at end"]

    one = by_label["remove message:m00006"]
    assert [n for n, _, _ in one.run.segments] == [n for n in BASELINE if n != "message:m00006"]
    assert (one.removed, one.moved, one.added) == (("message:m00006",), (), ())
    assert one.tokens_delta == -tokens["message:m00006"]
    # The failing run held the last error: one of the three evidence items is gone from the view.
    assert one.metric_deltas["evidence_recall"] == pytest.approx(-1 / 3)
    assert ERROR not in json.dumps(one.run.to_json())

    steps = by_label["remove step"]
    assert [n for n, _, _ in steps.run.segments] == ["system", "message:m00001"]
    assert steps.removed == tuple(BASELINE[2:])
    assert steps.tokens_delta == -sum(tokens[n] for n in BASELINE[2:])

    swap = by_label["swap m00002 and message:m00006"]
    assert [n for n, _, _ in swap.run.segments] == ["system", "message:m00001", "message:m00006", "message:m00004",
                                                    "message:m00002", "message:m00008"]
    assert (swap.removed, swap.moved, swap.added, swap.tokens_delta) == ((), ("message:m00006", "message:m00002"), (), 0)
    assert all(delta == 0 for delta in swap.metric_deltas.values())

    inject = by_label["conflicting location"]
    assert [n for n, _, _ in inject.run.segments] == [*BASELINE[:2], "message:injected-4", *BASELINE[2:]]
    assert [c for n, c, _ in inject.run.segments if n == "message:injected-4"] == ["injected"]
    assert (inject.removed, inject.moved, inject.added) == ((), (), ("message:injected-4",))
    assert inject.tokens_delta == dict((n, t) for n, _, t in inject.run.segments)["message:injected-4"] > 0
    before = by_label["inject at before:message:m00008"]
    assert [n for n, _, _ in before.run.segments] == [*BASELINE[:5], "message:injected-5", "message:m00008"]
    end = by_label["inject at end"]
    assert [n for n, _, _ in end.run.segments] == [*BASELINE, "message:injected-6"]

    # Every run saw its own view; without a provider nothing was asked.
    digests = {base.digest, *(c.run.digest for c in result.counterfactuals)}
    assert len(digests) == 1 + len(CHANGES)
    assert all(c.answer_changed is None and c.run.answer is None for c in result.counterfactuals)


def test_a_scripted_provider_answers_each_run_with_the_view_it_was_given(tmp_path: Path) -> None:
    def answer(request: ModelRequest) -> str:
        text = "\n".join(m.text for m in request.messages)
        return "look in tests/legacy" if "tests/legacy" in text else "run tests/"

    provider = FunctionProvider(answer)
    result = _run(tmp_path, provider)
    assert len(provider.requests) == 1 + len(CHANGES)
    assert result.baseline_run is not None and result.baseline_run.answer == "run tests/"
    changed = {c.change.label: c.answer_changed for c in result.counterfactuals}
    assert changed == {"remove message:m00006": False, "remove step": False, "swap m00002 and message:m00006": False,
                       "conflicting location": True, "inject at before:message:m00008": False,
                       "inject at end": False}
    swapped = provider.requests[3]
    assert [m.id for m in swapped.messages][:3] == ["m00001", "m00006", "m00007"]


def test_the_hook_counts_the_counterfactual_runs_too(tmp_path: Path) -> None:
    (case,) = load_cases(_case(tmp_path, counterfactuals=CHANGES))
    session = read_session_file(case.session)
    seen: list[int] = []
    run_case(case, session, counter=COUNTER, on_call=lambda: seen.append(1))
    assert len(seen) == calls_of(case, session) == 4 + 1 + len(CHANGES)


@pytest.mark.parametrize(("change", "message"), [
    ({"remove": "message:nope"}, "no segment 'message:nope' in the view (segments: system, message:m00001"),
    ({"swap": ["system", "m00002"]}, "swap moves message segments"),
    ({"inject": "x", "at": 9}, "inject at 9: a position from 0 to 5"),
])
def test_a_change_naming_nothing_in_the_view_says_what_is_there(tmp_path: Path, change: dict[str, object],
                                                                message: str) -> None:
    (case,) = load_cases(_case(tmp_path, counterfactuals=[change]))
    with pytest.raises(CounterfactualError, match="^" + message.replace("(", r"\(")):
        run_case(case, read_session_file(case.session), counter=COUNTER)


@pytest.mark.parametrize("change", [{"remove": ""}, {"swap": ["a"]}, {"swap": ["a", "a"]}, {"inject": "x", "at": True},
                                    {"remove": "a", "inject": "b"}, {"remove": "a", "at": 1}, {"drop": "a"}, "remove"])
def test_a_badly_written_counterfactual_is_refused_when_the_case_is_loaded(tmp_path: Path, change: object) -> None:
    with pytest.raises(CaseError, match="counterfactual 1"):
        load_cases(_case(tmp_path, counterfactuals=[change]))


def test_nova_eval_reports_the_counterfactuals_in_json_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_HOME", str(tmp_path / "home"))
    case = _case(tmp_path, counterfactuals=CHANGES[:1] + CHANGES[3:4])
    out = CliRunner().invoke(app, ["eval", str(case), "--json"])
    assert out.exit_code == 0, out.output
    runs = json.loads(out.stdout)["results"][0]["counterfactuals"]
    assert [s["name"] for s in runs["baseline"]["segments"]] == BASELINE
    assert [r["changed"]["removed"] for r in runs["runs"]] == [["message:m00006"], []]
    assert runs["runs"][1]["changed"]["added"] == ["message:injected-2"]
    assert runs["runs"][0]["changed"]["metric_deltas"]["evidence_recall"] == pytest.approx(-1 / 3, abs=1e-6)
    text = CliRunner().invoke(app, ["eval", str(case)])
    assert text.exit_code == 0, text.output
    assert "remove message:m00006: view " in text.stdout and "removed message:m00006" in text.stdout
    assert "conflicting location: view " in text.stdout and "added message:injected-2" in text.stdout


def test_call_model_sends_the_runs_through_the_configured_provider(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NOVA_PROVIDER", "demo")  # the offline demo model, made by the provider factory
    out = CliRunner().invoke(app, ["eval", str(_case(tmp_path, counterfactuals=CHANGES[:1])), "--json", "--call-model"])
    assert out.exit_code == 0, out.output
    runs = json.loads(out.stdout)["results"][0]["counterfactuals"]
    assert runs["baseline"]["answer"] is not None
    assert runs["runs"][0]["changed"]["answer_changed"] in (True, False)


def test_a_target_absent_from_this_view_leaves_it_unchanged_with_a_note(tmp_path: Path) -> None:
    (case,) = load_cases(_case(tmp_path, counterfactuals=[{"remove": "summary"}]))
    session = read_session_file(case.session)
    (result,) = run_case(case, session, counter=COUNTER)
    (run,) = result.counterfactuals
    assert result.baseline_run is not None and run.run.digest == result.baseline_run.digest
    assert (run.removed, run.moved, run.added, run.tokens_delta) == ((), (), (), 0)
    assert run.to_json()["changed"]["note"] == "no summary segment in this view"
    # A recorded message a policy compacted away is noted the same way; an id nobody recorded is an error.
    parts = segments_of(session.system, (), session.messages[:3])
    with pytest.raises(NotInView, match="message:m00006 is recorded but not in this view"):
        apply_counterfactual(parts, Counterfactual(kind="remove", targets=("m00006",)), recorded={"m00006"})
    with pytest.raises(CounterfactualError, match="no segment 'm00006'") as raised:
        apply_counterfactual(parts, Counterfactual(kind="remove", targets=("m00006",)))
    assert not isinstance(raised.value, NotInView)
