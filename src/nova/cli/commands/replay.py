"""`nova replay PATH`: run a recorded session through a context policy and report what it would cost.

Mounted lazily by `nova.cli.main` as `nova replay`. Reads any format
`nova.sessions.importers.read_session_file` knows (mini-swe-agent, SWE-agent, OpenAI chat lists, Claude
Code JSONL, Nova transcripts). The compaction settings come from `~/.nova/config.json` (NOVA_HOME), read
here at the edge; layer 2 uses the extractive summarizer, since a replay has no model to ask.

`--at-recorded-compaction` replays up to the recorded agent's own first compaction, makes Nova compact at that
message and prints the two summaries side by side with the facts of the transcript each keeps
(`nova.evaluation.anchor`).

The cost model: `--provider-cache anthropic|openai` simulates that provider's prompt cache over the calls,
`--summarizer model-estimate` counts the call a model summarizer would make at each compaction (reading
the cached prefix, answering with a summary the size of the extractive one). Each call is priced at the
model the recording names for it; `--price MODEL` is the fallback for a call that names none or one the
model table does not know, and the text report says which model priced how many calls.
"""

# No `from __future__ import annotations`: typer reads the command signatures each time the command
# runs, and string annotations would be evaluated again each time.
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from nova.cli.commands.errors import user_errors
from nova.cli.commands.global_options import global_overrides
from nova.context.receipt import receipt_line
from nova.evaluation.replay import (
    ALL_POLICIES,
    Policy,
    replay_session,
    session_window,
    unpriced_reason,
    view_document,
)
from nova.model import usage_of
from nova.present.run_progress import RunProgress
from nova.present.terminal import terminal_console
from nova.providers.pricing import model_info
from nova.settings import load_settings
from nova.tokens import counter_for_model

__all__ = ["replay_command"]

if TYPE_CHECKING:
    from nova.evaluation.replay import ReplayReport
    from nova.sessions.readers.base import ImportedSession
    from nova.settings import Settings

_FIRST_FORMATS = ("mini-swe-agent", "swe-agent", "openai")

console = terminal_console(highlight=False)
err_console = terminal_console(stderr=True, highlight=False)


def replay_command(
    path: Annotated[Path, typer.Argument(help="A recorded session in any format `nova sessions import` takes "
                                          "(Claude Code or Codex JSONL, a Gemini CLI or OpenCode JSON, .traj.json, "
                                          ".traj, chat JSON, ...), a session folder, or the id of a session Nova "
                                          "recorded or imported.")],
    window: Annotated[int | None, typer.Option("--window", help="Context window of the model to simulate, in "
                      "tokens. Default: the window of the model the recording's calls name (the model table's), "
                      "else the config's compaction.default_context_window (128000).")] = None,
    policy: Annotated[str, typer.Option("--policy", help="recorded | naive | truncate | observation-mask | nova | "
                                        "naive-uncached | naive-cached | anthropic-clear-tool-uses")] = "nova",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with per-call and total figures.")
                       ] = False,
    dump_view: Annotated[Path | None, typer.Option("--dump-view", help="Write the final model view to this JSON "
                                                   "file (system, tools, messages).")] = None,
    provider_cache: Annotated[str | None, typer.Option("--provider-cache", help="Simulate this provider's "
                              "prompt cache: anthropic | openai.")] = None,
    summarizer: Annotated[str, typer.Option("--summarizer", help="extractive | model-estimate (also count the "
                          "model summary call each compaction would make).")] = "extractive",
    price: Annotated[str | None, typer.Option("--price", help="Fallback price (model table), e.g. "
                     "claude-sonnet-4-5. The cost prices each call at the model the recording names for it, and at "
                     "this one a call that names none or names one the model table does not know; the bill takes "
                     "it only for a call naming no model in a recording that names none for the session. The "
                     "output says which model priced how many calls; the --report plot of the cost prices every "
                     "call at this model.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse a file with a record that cannot be "
                      "read instead of skipping it with a warning.")] = False,
    instance: Annotated[str | None, typer.Option("--instance", help="For a file of several runs (OpenHands "
                        "output.jsonl): the run to replay, by instance id or issue (default: the first).")
                        ] = None,
    report_html: Annotated[Path | None, typer.Option("--report", help="Also write one self-contained HTML file "
                           "with the plots (context per call, its composition, compactions, cost and cache hit) and each "
                           "compaction's kept/dropped lists. Needs the `report` extra (plotly).")] = None,
    at_recorded_compaction: Annotated[bool, typer.Option(
        "--at-recorded-compaction", help="Replay up to the recorded agent's first compaction (Claude Code's "
        "compact_boundary), make Nova compact at that message, and print both summaries side by side with the "
        "facts of the transcript each keeps. --dump-view writes Nova's view right after that compaction; --json "
        "prints the figures.")] = False,
) -> None:
    """Replay a recorded session as if the agent had used this context policy."""
    if policy not in ALL_POLICIES:
        err_console.print(f"nova: error: --policy must be one of {', '.join(ALL_POLICIES)}, not {policy!r}")
        raise typer.Exit(2)
    if provider_cache not in (None, "anthropic", "openai"):
        err_console.print(f"nova: error: --provider-cache must be anthropic or openai, not {provider_cache!r}")
        raise typer.Exit(2)
    if summarizer not in ("extractive", "model-estimate"):
        err_console.print(f"nova: error: --summarizer must be extractive or model-estimate, not {summarizer!r}")
        raise typer.Exit(2)
    if price is not None and model_info(price) is None:
        err_console.print(f"nova: error: --price: no price for model {price!r} in the model table")
        raise typer.Exit(2)
    if window is not None and window <= 0:
        err_console.print("nova: error: --window must be a positive number of tokens")
        raise typer.Exit(2)
    if report_html is not None:
        from nova.cli.commands.report_extra import require_report_extra

        require_report_extra(report_html)
    from nova.sessions.importers import read_session_file

    with user_errors():
        settings = load_settings(env=dict(os.environ), overrides=global_overrides())
    path = _recorded_path(path, settings.home)
    if at_recorded_compaction:
        if policy != "nova" or report_html is not None or provider_cache or price or summarizer != "extractive":
            err_console.print("nova: error: --at-recorded-compaction compares Nova's own compaction (policy nova, "
                              "extractive summarizer); it takes --window, --dump-view and --json only")
            raise typer.Exit(2)
        if window is None:
            with user_errors(exit_code=1, os_errors=True):
                window = _window_of(read_session_file(path), settings)
        _at_recorded_compaction(path, window=window, settings=settings, as_json=as_json, dump_view=dump_view)
        return
    # A file that cannot be read exits 1, as `nova sessions import` does for the same file.
    with user_errors(exit_code=1, os_errors=True):
        session = read_session_file(path, strict=strict)
    session = _chosen_run(session, instance, path)
    if window is None:
        window = _window_of(session, settings)
    for skipped in session.skipped:
        err_console.print(f"nova: warning: skipped {skipped.describe()}", markup=False, soft_wrap=True)
    model = str(session.meta.get("model") or settings.model)
    # Replays run in bulk; per-compaction warnings belong in the figures, not on the terminal.
    for name in ("nova.agent", "nova.context"):
        logging.getLogger(name).setLevel(logging.ERROR)
    chosen: Policy = policy  # type: ignore[assignment]
    counter = counter_for_model(model)
    # A fixed prompt over the window (PromptTooLarge) is one clear error naming the sizes, not a traceback.
    calls = sum(1 for m in session.messages if m.role == "assistant")
    with user_errors(exit_code=1), RunProgress(calls, label="replaying calls", stream=sys.stderr) as bar:
        report = replay_session(session, window=window, policy=chosen,
                                config=settings.compaction, spill=settings.spill, counter=counter,
                                provider_cache=provider_cache,  # type: ignore[arg-type]  # checked above
                                summarizer_estimate=summarizer == "model-estimate", price_model=price,
                                on_call=bar.advance)
    if report.window_raised_from:
        err_console.print(f"nova: note: with the stand-in for the missing fixed prompt, policy {policy} "
                          f"cannot fit the {report.window_raised_from:,}-token window; replayed at {report.window:,}, the smallest "
                          "window that can work", markup=False, soft_wrap=True)
    if report.uncounted_usage_calls:
        err_console.print(f"nova: note: {report.uncounted_usage_calls} of {report.calls} recorded calls report usage "
                          "that counts less than their request held (a few tokens for tens of thousands): it is "
                          "left out, those calls are estimated, and the bill is unknown", markup=False, soft_wrap=True)
    if report.placeholder_tokens:
        what = "its tool definitions" if session.system else "its system prompt and tools"
        err_console.print(f"nova: note: the recording lacks {what}; a placeholder of "
                          f"{report.placeholder_tokens:,} tokens stands in (first response's usage)",
                          markup=False, soft_wrap=True)
    if report_html is not None:
        from nova.cli.commands.report_extra import write_report
        from nova.evaluation.report import replay_report_html

        write_report(report_html, replay_report_html(report, source=path.name))
    if dump_view is not None:
        dump_view.write_text(json.dumps(view_document(report), ensure_ascii=False, indent=2), encoding="utf-8")
    source = session.meta.get("source_counts")
    imported = {"responses": report.calls,
                "tool_calls": sum(len(m.tool_uses()) for m in session.messages),
                "tool_results": sum(len(m.tool_results()) for m in session.messages)}
    if as_json:
        data = report.to_json()
        # The trajectory formats the replay JSON was first built on keep exactly the keys they always had
        # (tools compare them); their source counts are in the text report.
        if isinstance(source, dict) and session.format not in _FIRST_FORMATS:
            data["import"] = {"format": session.format, "source": source, "imported": imported,
                              "skipped": len(session.skipped)}
        print(json.dumps(data))
        return
    console.print(f"[bold]{escape(path.name)}[/] ({escape(session.format)}) policy={policy} window={report.window:,}")
    if report.placeholder_tokens:
        console.print(f"  fixed prompt: an estimated stand-in of {report.placeholder_tokens:,} tokens (the recording "
                      "lacks it; sized from the first call's usage)", markup=False)
    if report.inlined_placeholder_tokens:
        console.print(f"  first user message: an estimated stand-in of {report.inlined_placeholder_tokens:,} tokens "
                      "for content the agent inlined into it (an @-mentioned file the recording lacks)", markup=False)
    console.print(f"  calls {report.calls}, input tokens {report.input_tokens:,}, output tokens {report.output_tokens:,}")
    over = (f" [red]({report.requests_over_window} request{'s' * (report.requests_over_window != 1)} over the "
            f"{window:,} window: a provider would refuse them)[/]" if report.requests_over_window else "")
    console.print(f"  peak context {report.peak_context_tokens:,}, mean {report.mean_context_tokens:,.0f}{over}")
    console.print(f"  compactions {report.compactions}, snips {report.snips}, spills {report.spills}, "
                  f"breaker trips {report.breaker_trips}, invariant violations {report.invariant_violations}")
    if report.billed_usd is not None:
        console.print(f"  billed ${report.billed_usd:.4f} ({_billed_basis(session, report)})", markup=False)
    elif report.uncounted_usage_calls:
        console.print(f"  billed unknown ({report.uncounted_usage_calls} calls' recorded usage does not count "
                      "their request)")
    if report.provider_cache or report.cost_usd is not None or report.unpriced_models:
        cost = f", cost ${report.cost_usd:.4f} (+ agent output ${report.output_cost_usd or 0:.4f})" \
            if report.cost_usd is not None else f", cost unknown ({unpriced_reason(report.unpriced_models)})"
        # Without a simulated cache nothing could be read from one: the rate is not 0 %, it is not measured.
        hit = f"{report.cache_hit_rate:.1%}" if report.provider_cache else "n/a (no cache simulated: --provider-cache)"
        # The receipts below price the model summary call a live Nova would make; the cost counts those
        # calls only when asked to, and says so rather than "0" beside receipts that charge them.
        summaries = report.summary_calls_counted
        console.print(f"  cache ({report.provider_cache or 'none'}): read {report.cache_read_tokens:,}, written "
                      f"{report.cache_write_tokens:,}, uncached {report.uncached_input_tokens:,}, hit rate "
                      f"{hit}, summary calls {summaries}{cost}")
    if report.priced_by and (report.cost_usd is not None or report.output_cost_usd is not None):
        console.print("  priced: " + ", ".join(f"{calls} call{'s' * (calls != 1)} at {model} ({why})"
                                                for model, why, calls in report.priced_by),
                      markup=False, soft_wrap=True)
    for number, receipt in enumerate(report.receipts, 1):
        console.print(f"  compaction {number}: {receipt_line(receipt)}", markup=False)
    if report.repaired:
        console.print(f"  repaired before replay: {report.repaired}", markup=False)
    if isinstance(source, dict):
        console.print("  source / imported: " + ", ".join(f"{k} {source.get(k)}/{v}" for k, v in imported.items()),
                      markup=False)
    if session.children:
        # The figures above are the main conversation's: a sub-agent's calls (and the summary calls of
        # Claude Code's compactions, run as agents of their own) were billed apart.
        runs = sum(1 for child in session.children if child.meta.get("compaction_run"))
        kinds = [f"{n} {what}{'s' * (n != 1)}" for n, what in ((len(session.children) - runs, "sub-agent"),
                                                               (runs, "compaction summary run")) if n]
        console.print(f"  not in these figures: {' and '.join(kinds)} (each a session of its own: `nova sessions "
                      "import` makes one of each, and `nova replay ID` replays one)",
                      markup=False, soft_wrap=True)
    for line in report.violations[:10]:
        console.print(f"  [red]{escape(str(line))}[/]")


def _recorded_path(path: Path, home: Path) -> Path:
    """`path` as given when it names a file or folder; else, when it is the id of a session in `home`
    (one `nova sessions import` printed, or `last`), that session's folder."""
    if path.exists() or len(path.parts) != 1:
        return path
    from nova.errors import NovaError
    from nova.sessions.export import latest_session_id
    from nova.sessions.meta import session_dir

    try:
        session_id = latest_session_id(home) if str(path) == "last" else str(path)
        found = session_dir(home, session_id) if session_id else None
    except NovaError:  # not a session id either: the reader says the file does not exist
        return path
    if found is None or not found.is_dir():
        err_console.print(f"nova: error: {path} is neither a file nor a recorded session (`nova sessions list` "
                          "shows the ids)", markup=False, soft_wrap=True)
        raise typer.Exit(1)
    return found


def _billed_basis(session: "ImportedSession", report: "ReplayReport") -> str:
    """What the billed figure adds up: every call's recorded usage, or only the calls that record one,
    and whether part of it is Nova's estimate (Cline lumps cache reads and writes together)."""
    with_usage = sum(1 for m in session.messages if m.role == "assistant" and (u := usage_of(m)) is not None
                     and (u.context_tokens or u.output_tokens))
    if with_usage >= report.calls:
        basis = "the recorded usage of every call at its model's price"
    else:
        missing = report.calls - with_usage
        basis = (f"the recorded usage of {with_usage} of the {report.calls} calls at each one's model's price; "
                 f"{missing} record{'s' * (missing == 1)} none and {'is' if missing == 1 else 'are'} not in it")
    split = session.meta.get("cache_split_estimated")
    if split:
        basis += (f"; the cache read/write split of {split} call{'s' * (split != 1)} is estimated (the file lumps "
                  "them together)")
    return basis


def _window_of(session: "ImportedSession", settings: "Settings") -> int:
    """The window the recording ran with, when the model table knows a model its calls name: replayed at
    a smaller one, a recording that ran well within its own reads as requests a provider would refuse."""
    known, _ = session_window(session)
    return known or settings.compaction.default_context_window


def _at_recorded_compaction(path: Path, *, window: int, settings: "Settings", as_json: bool,
                            dump_view: Path | None) -> None:
    from nova.evaluation.anchor import NoRecordedCompaction, at_recorded_compaction
    from nova.evaluation.anchor_view import comparison_lines, side_by_side_lines

    for name in ("nova.agent", "nova.context"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with user_errors(exit_code=1, os_errors=True):
        try:
            comparison = at_recorded_compaction(path, window=window, config=settings.compaction, spill=settings.spill,
                                                counter=counter_for_model(settings.model))
        except NoRecordedCompaction as exc:
            err_console.print(f"nova: error: {exc}", markup=False, soft_wrap=True)
            raise typer.Exit(1) from None
    if dump_view is not None:
        dump_view.write_text(json.dumps(view_document(comparison.report), ensure_ascii=False, indent=2),
                             encoding="utf-8")
    if as_json:
        print(json.dumps(comparison.to_json()))
        return
    for line in [*comparison_lines(comparison), "", *side_by_side_lines(comparison, width=console.width)]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _chosen_run(session: "ImportedSession", instance: str | None, path: Path) -> "ImportedSession":
    """The run `--instance` names (a file may hold several: OpenHands `output.jsonl`), else the first, saying
    so when there are others."""
    runs = session.runs()
    names = [str(r.meta.get("run") or r.meta.get("instance_id") or "") for r in runs]
    if instance is not None:
        for run, name in zip(runs, names, strict=True):
            if instance in {name, str(run.meta.get("instance_id") or "")} - {""}:
                return run
        listed = ", ".join(n for n in names if n) or "none named"
        err_console.print(f"nova: error: --instance: no run {instance!r} in {path.name} (runs: {listed})",
                          markup=False, soft_wrap=True)
        raise typer.Exit(2)
    if len(runs) > 1:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        err_console.print(f"nova: note: {path.name} holds {len(runs)} runs ({shown}); replaying {names[0]}. "
                          "Choose another with --instance.", markup=False, soft_wrap=True)
    return session
