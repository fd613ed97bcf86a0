"""The report's numbers on hand-made replays with a known answer (composition by kind, kept/dropped lists of a
forced compaction, truncation cuts), the pages it writes, the CLI, and the message without plotly."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.metrics import Metric, Ratio
from nova.evaluation.replay import replay_messages
from nova.evaluation.replay_views import COMPOSITION_KINDS, EXCERPT_CHARS
from nova.evaluation.report import eval_report_html, replay_report_html
from nova.evaluation.report_data import metric_rows, series_of
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import ToolSpec
from nova.tokens import count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)
SYSTEM = "You are a careful coding agent. Keep answers short."
TOOLS = (ToolSpec(name="bash", description="Run a shell command.",
                  input_schema={"type": "object", "properties": {"command": {"type": "string"}}}),)
TASK = "Fix f3.py so the tests pass."


def _conversation(steps: int, *, output_words: int = 40) -> list[Message]:
    """A task, then `steps` calls of a bash tool, each answered by an output of `output_words` words."""
    messages = [Message.user(TASK, id="task")]
    for i in range(steps):
        call = ToolUsePart(id=f"call{i}", name="bash", input={"command": f"cat f{i}.py"})
        messages.append(Message(role="assistant", parts=(call,), id=f"a{i}", created_at=1000.0 + i))
        messages.append(Message(role="user", parts=(ToolResultPart(f"call{i}", f"line{i} " * output_words),),
                                id=f"r{i}", created_at=1000.5 + i))
    messages.append(Message.assistant("Done: f3.py is fixed.", id="final", created_at=2000.0))
    return messages


def test_each_call_composition_is_system_tools_and_history_summing_to_its_input() -> None:
    messages = _conversation(6)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="naive", counter=COUNTER)
    system, tools = count_system(SYSTEM, COUNTER), count_tools(TOOLS, COUNTER)
    assert report.calls == 7
    for n, call in enumerate(report.per_call):
        # Before the n-th assistant message the history is the task and n exchanges.
        history = sum(count_message(m, COUNTER) for m in messages[: 1 + 2 * n])
        assert list(call.composition) == list(COMPOSITION_KINDS)
        assert call.composition == {"system": system, "tools": tools, "rules": 0, "memory": 0, "history": history,
                                    "summary": 0, "observations": 0}
        assert sum(call.composition.values()) == call.input_tokens
    # The JSON keeps the numbers.
    assert report.to_json()["per_call"][3]["composition"]["history"] == report.per_call[3].composition["history"]


def test_a_forced_compaction_lists_what_it_dropped_kept_and_added() -> None:
    messages = _conversation(12, output_words=300)
    at = 1 + 2 * 8  # before the 9th assistant message
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova", counter=COUNTER,
                             compact_before=[at], cwd="/work/project")
    assert report.compactions == 1
    (change,) = report.view_changes
    assert (change.call, change.event, change.forced) == (9, "compaction", True)
    before = [m.id for m in messages[:at]]
    dropped, kept = [e.id for e in change.dropped], [e.id for e in change.kept]
    # The task statement and the newest part kept, what lay between folded: together exactly the history
    # before.
    assert kept[0] == "task" and dropped[0] == "a0"
    assert [kept[0], *dropped, *kept[1:]] == before
    # The summary, and the restore attachment it carries, under one name.
    added, attachment = change.added
    assert (added.role, added.kind) == ("user", "summary") and added.id.startswith("summary-")
    assert added.excerpt.startswith("[Previous conversation summary]")
    assert (attachment.kind, attachment.id) == ("observations", added.id)
    assert attachment.excerpt.startswith("[Restored context]")
    for entry in (*change.dropped, *change.kept):
        original = next(m for m in messages if m.id == entry.id)
        assert entry.role == original.role and entry.tokens > 0 and "\n" not in entry.excerpt
        assert len(entry.excerpt) <= EXCERPT_CHARS
    assert next(e for e in change.dropped if e.id == "a0").excerpt == "bash(cat f0.py)"
    # From the 9th call on, the view holds the summary, named and sized in the composition; the
    # observations are its restore attachment (a recording of another agent gets no environment of Nova's).
    ninth = report.per_call[8]
    assert not [m for m in report.final_view if m.origin == "context"]
    assert (ninth.composition["summary"], ninth.composition["observations"]) == (added.tokens, attachment.tokens)
    assert sum(ninth.composition.values()) == ninth.input_tokens
    assert series_of(report).compactions == (9,)
    # The same recording gives the same JSON, byte for byte, the summary's name included.
    again = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova", counter=COUNTER,
                            compact_before=[at], cwd="/work/project")
    assert json.dumps(again.to_json()) == json.dumps(report.to_json())
    assert report.to_json()["view_changes"][0]["kept"][0]["id"] == "task"


def test_a_later_compaction_lists_the_earlier_summary_under_the_same_name() -> None:
    messages = _conversation(14, output_words=300)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova", counter=COUNTER,
                             compact_before=[1 + 2 * 6, 1 + 2 * 12])
    first, second = report.view_changes
    assert first.added[0].id in [e.id for e in second.dropped + second.kept]


def test_truncation_cuts_list_each_dropped_message_once() -> None:
    messages = _conversation(30, output_words=250)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=8_000, policy="truncate", counter=COUNTER)
    cuts = report.view_changes
    assert cuts and all(c.event == "truncate" and not c.kept and not c.added for c in cuts)
    dropped = [e.id for c in cuts for e in c.dropped]
    assert len(dropped) == len(set(dropped)) and "task" not in dropped  # the task statement always stays
    assert dropped == [m.id for m in messages[1:1 + len(dropped)]]  # oldest first
    assert [c.call for c in cuts] == sorted({c.call for c in cuts})
    assert all(sum(c.composition.values()) == c.input_tokens for c in report.per_call)


def test_series_cumulative_cost_and_cache_hit() -> None:
    messages = _conversation(8, output_words=400)
    plain = series_of(replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="naive",
                                      counter=COUNTER))
    assert not plain.cost_priced and not plain.cache_simulated and set(plain.cache_hit) == {None}
    assert plain.cumulative[-1] == sum(plain.context)
    cached = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="naive", counter=COUNTER,
                             provider_cache="anthropic", price_model="claude-sonnet-4-5")
    s = series_of(cached)
    assert s.cost_priced and s.cache_simulated and s.cumulative[-1] == pytest.approx(sum(s.call_cost))
    for hit, call in zip(s.cache_hit, cached.per_call, strict=True):
        assert hit == pytest.approx(call.cache.cache_read_tokens / call.cache.context_tokens)
    assert max(h or 0 for h in s.cache_hit) > 0.5


def test_metric_rows_take_whatever_metrics_the_results_hold() -> None:
    rows = metric_rows({
        "nova": {"evidence_recall": Ratio(2, 3, "evidence items"), "latency_per_call": Metric(0.25, "seconds"),
                 "memory_usefulness": Ratio(0, 0, "retrieved items", na="no memory was recalled")},
        "naive": {"evidence_recall": Ratio(3, 3, "evidence items"), "cost_per_call": Metric(None, "USD per call"),
                  "latency_per_call": Metric(1234.5678, "seconds")},
    })
    assert rows == [("evidence_recall", "evidence items", ["66.7% (2 of 3)", "100.0% (3 of 3)"]),
                    ("latency_per_call", "seconds", ["0.25", "1,235"]),
                    ("memory_usefulness", "retrieved items", ["n/a (no memory was recalled)", "—"]),
                    ("cost_per_call", "USD per call", ["—", "n/a"])]


def _figures(page: str) -> list[str]:
    return re.findall(r'<div class="plot" data-figure="([^"]+)">', page)


def _offline(page: str) -> None:
    """plotly.js is inlined once and no tag loads anything (the Chromium check counts real requests)."""
    assert "<script src=" not in page and "<link" not in page
    assert page.count("Plotly.newPlot(") == len(_figures(page))
    assert len(re.findall(r"plotly\.js v\d", page)) == 1


def test_the_replay_page_has_one_plot_per_figure_and_the_compaction_lists() -> None:
    messages = _conversation(12, output_words=300)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova", counter=COUNTER,
                             compact_before=[9, len(messages)])
    page = replay_report_html(report, source="hand-made")
    assert _figures(page) == ["context", "composition", "cost"]
    _offline(page)
    assert page.count('<details class="change">') == 2
    assert "call 5 · compaction (forced)" in page and "the final view (after the last call)" in page
    assert "n\\u002fa, no provider cache was simulated" in page  # the cache plot says why it is empty (JSON)
    assert "<th>compactions</th><td>2</td>" in page
    # Each compaction's receipt, in the words of the CLI line.
    assert report.receipts
    from nova.context.receipt import receipt_line
    for number, receipt in enumerate(report.receipts, 1):
        assert f"<li>compaction {number}: {html.escape(receipt_line(receipt))}</li>" in page


def test_the_page_says_what_the_cost_holds_of_the_summary_calls_as_the_cli_does() -> None:
    """The page said "summary calls included" beside a cost that did not count them (the CLI line said
    "not counted"), so the two disagreed on what the same figure was."""
    messages = _conversation(12, output_words=300)
    for estimate in (False, True):
        report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova",
                                 counter=COUNTER, compact_before=[9], provider_cache="anthropic",
                                 price_model="claude-sonnet-4-5", summarizer_estimate=estimate)
        assert report.cost_usd is not None and report.receipts
        page = replay_report_html(report, source="hand-made")
        said = html.escape(f"summary calls {report.summary_calls_counted}")
        assert said in page
        assert ("not counted" in said) is (not estimate) and "summary calls included" not in page


def test_receipts_of_a_recording_that_names_its_calls_model_only_are_in_dollars() -> None:
    """Claude Code names the model per call, never for the session: the receipts were worded in
    "input-token equivalents" beside a bill in dollars, though every call's price was known."""
    messages = [m if m.role != "assistant" else Message(role=m.role, parts=m.parts, id=m.id, created_at=m.created_at,
                                                        metadata={"model": "claude-sonnet-4-5"})
                for m in _conversation(12, output_words=300)]
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova", counter=COUNTER,
                             compact_before=[9])
    assert report.receipts
    assert all(receipt.usd_per_unit == 3.0 / 1_000_000 for receipt in report.receipts)


def test_long_lists_are_bounded() -> None:
    messages = _conversation(120, output_words=10)
    report = replay_messages(messages, system=SYSTEM, tools=TOOLS, window=128_000, policy="nova", counter=COUNTER,
                             compact_before=[len(messages) - 3])
    assert len(report.view_changes[0].dropped) > 200
    page = replay_report_html(report, source="hand-made")
    assert f"… and {len(report.view_changes[0].dropped) - 200:,} more (all in --json)" in page


def _session_file(tmp_path: Path) -> Path:
    steps = []
    for i in range(30):
        steps += [{"role": "assistant", "content": f"THOUGHT: step {i}.\n\n```bash\ncat f{i}.py\n```"},
                  {"role": "user", "content": "<returncode>0</returncode>\n<output>\n" + f"line {i} " * 250
                   + "\n</output>"}]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {}, "trajectory_format": "mini-swe-agent-1", "messages": [
        {"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix f3.py."}, *steps]}))
    return path


def _case_file(tmp_path: Path, policies: list[str]) -> Path:
    _session_file(tmp_path)
    case = tmp_path / "cases.json"
    case.write_text(json.dumps({"name": "f3", "session": "run.traj.json", "window": 8000, "policies": policies,
                                "price": "claude-sonnet-4-5", "evidence": ["f3.py"],
                                "counterfactuals": [{"inject": "The tests live in tests/legacy/."}]}))
    return case


def write_replay_report(tmp_path: Path) -> Path:
    out = tmp_path / "replay.html"
    result = CliRunner().invoke(app, ["replay", str(_session_file(tmp_path)), "--window", "8000", "--provider-cache",
                                      "anthropic", "--price", "claude-sonnet-4-5", "--report", str(out)])
    assert result.exit_code == 0, result.output
    return out


def write_eval_report(tmp_path: Path) -> Path:
    out = tmp_path / "eval.html"
    result = CliRunner().invoke(app, ["eval", str(_case_file(tmp_path, ["nova", "truncate"])), "--report", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_replay_cli_writes_the_page(tmp_path: Path) -> None:
    page = write_replay_report(tmp_path).read_text()
    assert _figures(page) == ["context", "composition", "cost"]
    _offline(page)
    assert page.count('<details class="change">') >= 2  # 8k forces compactions
    assert "at claude-sonnet-4-5 prices" in page


def test_eval_cli_writes_one_page_for_every_case_and_policy(tmp_path: Path) -> None:
    page = write_eval_report(tmp_path).read_text()
    # Policy against policy, then each policy's three plots.
    assert _figures(page) == ["policy-context", "policy-cost", *["context", "composition", "cost"] * 2]
    _offline(page)
    for metric in ("evidence recall", "context precision", "cache hit rate", "cost per call"):
        assert f"<td>{metric}</td>" in page
    assert page.count("<h3>Counterfactuals, policy") == 2 and "inject at end" in page
    assert page.count("What each compaction kept and dropped</h4>") == 1  # nova
    assert page.count("What each cut dropped</h4>") == 1  # truncate
    # --json keeps the plotted numbers.
    result = CliRunner().invoke(app, ["eval", str(tmp_path / "cases.json"), "--json"])
    data = json.loads(result.output.strip().splitlines()[-1])["results"]
    assert [r["policy"] for r in data] == ["nova", "truncate"]
    assert all(sum(c["composition"].values()) == c["input_tokens"] for r in data for c in r["per_call"])
    assert {c["event"] for c in data[0]["view_changes"]} == {"compaction"}


def test_eval_page_without_several_policies_has_no_comparison(tmp_path: Path) -> None:
    from nova.evaluation.cases import load_cases
    from nova.evaluation.run import run_case
    from nova.sessions.importers import read_session_file

    (case,) = load_cases(_case_file(tmp_path, ["nova"]))
    page = eval_report_html(run_case(case, read_session_file(case.session), counter=COUNTER), source="cases.json")
    assert _figures(page) == ["context", "composition", "cost"]



def test_eval_page_keeps_two_cases_of_one_name_apart(tmp_path: Path) -> None:
    # The same session at two windows: both cases carry the session's name, and each is its own section
    # with its own policy comparison, never one comparison of four runs.
    from nova.evaluation.cases import load_cases
    from nova.evaluation.run import run_case
    from nova.sessions.importers import read_session_file

    _session_file(tmp_path)
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": [{"session": "run.traj.json", "window": w, "policies": ["nova", "truncate"]}
                                           for w in (8000, 16000)]}))
    loaded = load_cases(cases)
    assert loaded[0].name == loaded[1].name
    results = [r for case in loaded for r in run_case(case, read_session_file(case.session), counter=COUNTER)]
    page = eval_report_html(results, source="cases.json")
    assert page.count("<h2 id=\"case-") == 2 and len(set(re.findall(r'<h2 id="([^"]+)"', page))) == 2
    assert _figures(page) == ["policy-context", "policy-cost", *["context", "composition", "cost"] * 2] * 2

BLOCK_PLOTLY = "import sys; sys.modules['plotly'] = None; from nova.cli.main import main; sys.argv[0] = 'nova'; main()"


@pytest.mark.parametrize("command", ["replay", "eval"])
def test_without_plotly_report_fails_first_naming_the_extra(tmp_path: Path, command: str) -> None:
    target = str(_session_file(tmp_path) if command == "replay" else _case_file(tmp_path, ["nova"]))
    out = tmp_path / "out.html"
    run = subprocess.run([sys.executable, "-c", BLOCK_PLOTLY, command, target, "--report", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        "nova: error: --report needs the `report` extra (plotly): pip install 'nova-context-engine[report]' "
        "(in a checkout: pip install -e '.[report]')"]
    assert run.stdout == "" and not out.exists()  # nothing was replayed
    # Without --report the command does not need plotly.
    plain = subprocess.run([sys.executable, "-c", BLOCK_PLOTLY, command, target, "--json"], capture_output=True,
                           text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr


def test_a_one_call_replay_still_draws_its_point_and_the_lines_it_is_measured_against() -> None:
    from nova.evaluation.report_figures import composition_figure, context_figure, cost_figure

    report = replay_messages(_conversation(0), system=SYSTEM, tools=TOOLS, window=32_000, policy="nova",
                             counter=COUNTER)
    assert report.calls == 1
    figure = context_figure(series_of(report))
    context, window = figure.data[0], figure.data[1]
    # A line of one point draws nothing: each call is a marker too; the window spans the call, not 0 px.
    assert "markers" in context.mode and list(context.x) == [1]
    assert window.x[0] < 1 < window.x[1] and window.y[0] == 32_000
    assert figure.layout.xaxis.dtick == 1  # whole calls, not ticks at 0.2, 0.4, …
    assert {trace.type for trace in composition_figure(series_of(report)).data} == {"bar"}
    # Without a provider cache the cost stands alone (no empty, axis-less cache panel) and says why.
    cost = cost_figure(series_of(report))
    assert len(cost.data) == 1 and "yaxis2" not in cost.to_plotly_json()["layout"]
    (note,) = cost.layout.annotations
    assert note.xref == "paper" and note.text.startswith("cache hit per call: n/a")


@pytest.mark.parametrize("command", ["replay", "eval"])
def test_a_report_in_a_missing_folder_is_refused_before_the_work(tmp_path: Path, command: str) -> None:
    target = str(_session_file(tmp_path) if command == "replay" else _case_file(tmp_path, ["nova"]))
    out = tmp_path / "missing" / "out.html"
    result = CliRunner().invoke(app, [command, target, "--report", str(out), "--json"])
    assert result.exit_code == 2
    assert f"nova: error: --report: no folder {out.parent} to write out.html in" in result.output
    assert '"calls"' not in result.output and not out.exists()  # nothing was replayed


def test_only_the_report_modules_import_plotly() -> None:
    import ast

    import nova

    src = Path(nova.__file__).resolve().parent
    importers = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "plotly" or n.startswith("plotly.") for n in names):
                importers.add(path.relative_to(src).as_posix())
    assert importers == {"evaluation/report.py", "evaluation/report_figures.py"}
    # And the command starts without it.
    run = subprocess.run([sys.executable, "-c", "import sys; sys.modules['plotly'] = None; from nova.cli.main import main; "
                          "sys.argv[0] = 'nova'; main()", "--help"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "replay" in run.stdout


def test_eval_page_lists_the_memory_scenarios_as_tables(tmp_path: Path) -> None:
    from tests.evaluation.test_eval_memory import ATTEMPTS, SCENARIO

    _session_file(tmp_path)
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": [
        {"name": "f3", "session": "run.traj.json", "window": 8000, "policies": ["nova", "truncate"]},
        {"name": "memory", "memory": SCENARIO, "poisoning": ATTEMPTS}]}))
    out = tmp_path / "eval.html"
    result = CliRunner().invoke(app, ["eval", str(cases), "--report", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert _figures(page) == ["policy-context", "policy-cost", *["context", "composition", "cost"] * 2]
    scenario = page[page.index("<h2>Scenario memory</h2>"):]
    for text in ("<td>poisoning rate</td>", "<td>memory usefulness</td>", "<h3>Poisoning attempts</h3>",
                 "<td>push-to-main</td>", "<h3>Memory turns</h3>", "How do I run the tests?"):
        assert text in scenario, text
    assert scenario.count("<td>held") >= 2  # Nova keeps both attempts out


def test_the_report_is_named_on_stderr_and_json_stays_clean(tmp_path: Path) -> None:
    out = tmp_path / "named.html"
    run = subprocess.run([sys.executable, "-m", "nova.cli.main", "replay", str(_session_file(tmp_path)), "--window", "8000",
                          "--report", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["calls"] > 0
    assert f"report written to {out} (" in run.stderr and "MB" in run.stderr


def test_a_page_without_plots_gives_its_size_in_kb(tmp_path: Path) -> None:
    """Eval's memory scenarios alone make a page of a few KB: its size reads as KB, never "0.0 MB"."""
    cases = tmp_path / "memory.yaml"
    cases.write_text("cases:\n  - name: memory-checks\n    memory:\n      memories:\n"
                     "        - {name: test-command, body: \"Run the tests with `make check`.\"}\n"
                     "      turns:\n        - {ask: \"How do I run the tests?\", answer: \"I'll run `make check`.\"}\n")
    out = tmp_path / "memory.html"
    run = subprocess.run([sys.executable, "-m", "nova.cli.main", "eval", str(cases), "--report", str(out)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "NOVA_HOME": str(tmp_path / "home")})
    assert run.returncode == 0, run.stderr
    assert out.stat().st_size < 100_000
    assert "0.0 MB" not in run.stderr and re.search(r"report written to .* \(\d+ KB, opens offline", run.stderr)


def test_a_case_file_that_is_not_text_is_named_as_given(tmp_path: Path) -> None:
    binary = tmp_path / "cases.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    result = CliRunner().invoke(app, ["eval", str(binary)])
    assert result.exit_code == 2
    assert f"nova: error: case file {binary} is not UTF-8 text" in result.output


def test_each_model_reads_only_its_own_cache() -> None:
    """One simulated cache for every model let a call on another model read what the first model's calls
    wrote (a Gemini CLI chat's Pro call read 12k tokens its Flash calls had left; the recording read 0)."""
    def reads(*models: str) -> list[int]:
        named = iter(models)
        messages = [m if m.role != "assistant" else Message(role=m.role, parts=m.parts, id=m.id,
                                                            created_at=m.created_at, metadata={"model": next(named)})
                    for m in _conversation(4, output_words=300)]
        report = replay_messages(messages, system="You are careful. " * 400, tools=TOOLS, window=128_000,
                                 policy="naive", counter=COUNTER, provider_cache="anthropic")
        return [call.cache.cache_read_tokens for call in report.per_call]

    one = reads(*["claude-sonnet-4-5"] * 5)
    two = reads(*["claude-sonnet-4-5"] * 3, "claude-opus-4-1", "claude-opus-4-1")
    assert one[3] > 0 and two[:3] == one[:3]  # a model reads what its own earlier calls wrote
    assert two[3] == 0  # the first call on another model reads nothing
