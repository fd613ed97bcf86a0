"""`nova run`, `nova resume` and `nova demo`: one task through a recorded session, printed as a
timeline (or one JSON object), and the slash commands Nova answers without a model call.

The command signatures live in `nova.cli.main`; this module, and the agent it builds, load only when one of
these commands runs.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

import typer

from nova import events as ev
from nova.agent.builder import AgentOptions, build_agent, record_fixed_prompt
from nova.cli.commands.cli_settings import settings_from_cli
from nova.cli.commands.config_check import check_config
from nova.cli.commands.errors import user_errors
from nova.cli.commands.exit_codes import EXIT_USAGE
from nova.cli.commands.refusals import EXIT_REFUSED, RefusedCalls
from nova.cli.commands.terminal_approval import is_interactive_terminal, terminal_approver
from nova.errors import CommandError, NovaError
from nova.present.terminal import terminal_console
from nova.settings import PROVIDERS, Settings

__all__ = ["demo_command", "run_command"]

console = terminal_console(highlight=False)
err_console = terminal_console(stderr=True, highlight=False)


def run_command(
    prompt: str, *, provider: str | None, model: str | None, base_url: str | None, allow: list[str] | None,
    yes: bool, max_steps: int, cwd: Path | None, as_json: bool, resume: str | None, strict: bool = False,
    sandbox: bool | None = None, ask_where: bool = False,
) -> None:
    """`ask_where`: `nova resume` may ask (stdin on a terminal) which folder to resume in when the
    session's recorded folder is not the shell's; `nova run --resume` never asks (nova.cli.commands.resume_place)."""
    from nova.agent.provider_factory import make_provider
    from nova.cli.commands.run_prompt import SLASH_HELP, check_prompt, is_help, unknown_slash_command

    check_prompt(prompt)
    if is_help(prompt):  # answered here: no provider, no session
        print(json.dumps({"text": SLASH_HELP, "stop_reason": "end_turn"}, indent=2) if as_json else SLASH_HELP)
        return
    if (unknown := unknown_slash_command(prompt)) is not None:
        with user_errors(exit_code=EXIT_USAGE):  # a mistyped command in the prompt: a usage error
            raise NovaError(unknown)
    # os_errors: a write the storage layer did not expect to fail (a full disk) is one line, not a traceback.
    with user_errors(os_errors=True):
        settings = settings_from_cli(provider=provider, model=model, base_url=base_url, sandbox=sandbox)
        if resume is not None:  # the session's own provider, model and URL, unless flags name others
            from nova.sessions.model_settings import resume_target

            resume, settings = resume_target(settings, resume)
        # Before anything is created: a bad section must not leave an empty session behind.
        check_config(settings)
        llm = make_provider(settings, dict(os.environ))
        workdir = cwd.resolve() if cwd is not None else _resume_folder(settings, resume, ask_where=ask_where)
        # In a terminal the user is asked (one key); a script gets --yes / --allow or a refusal.
        interactive = is_interactive_terminal()
        if interactive:  # before anything of the project's runs: its servers and skill scripts
            from nova.cli.commands.trust import offer_trust

            offer_trust(settings, workdir, err_console if as_json else console)
        options = AgentOptions(cwd=workdir, allowed_tools=frozenset(allow or ()), yes=yes, max_steps=max_steps,
                               interactive=interactive,
                               ask=terminal_approver(err_console if as_json else console) if interactive else None)
        outcome = run_task(settings, llm, options, prompt, quiet=as_json, resume_id=resume, strict=strict)
    if as_json:
        print(json.dumps(outcome, indent=2))
    if outcome["stop_reason"] == "error":
        raise typer.Exit(1)
    if outcome.get("refused"):
        raise typer.Exit(EXIT_REFUSED)


def _resume_folder(settings: Settings, resume: str | None, *, ask_where: bool) -> Path:
    """The shell's folder for a new session; for a resumed one, the folder it was recorded in."""
    if resume is None:
        return Path.cwd().resolve()
    from nova.cli.commands.resume_place import recorded_cwd, resume_workdir, terminal_ask

    asks = ask_where and sys.stdin.isatty()
    return resume_workdir(resume, recorded_cwd(settings.home, resume), here=Path.cwd(),
                          ask=terminal_ask if asks else None,
                          note=lambda line: err_console.print(line, markup=False, soft_wrap=True))


def demo_command(*, directory: Path | None, as_json: bool) -> None:
    from nova.agent.demo import DEMO_PROMPT, demo_folder_problem, make_demo_project, make_demo_provider

    problem = demo_folder_problem(directory) if directory is not None else None
    if problem is not None:
        err_console.print(f"nova: error: --dir: {problem}; name a new or empty folder (or an earlier demo's)",
                          markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE)
    with user_errors(os_errors=True):
        settings = settings_from_cli(provider="demo", model="nova-demo")
        check_config(settings)
        root = directory or Path(tempfile.mkdtemp(prefix="nova-demo-"))
        project = make_demo_project(root.resolve())
        if not as_json:
            console.print(f"[bold]Nova demo[/] — offline, scripted model, real tools. Project: {project}\n")
        options = AgentOptions(cwd=project, yes=True, max_steps=20)
        outcome = run_task(settings, make_demo_provider(), options, DEMO_PROMPT, quiet=as_json)
        outcome["project"] = str(project)
    if as_json:
        print(json.dumps(outcome, indent=2))
    else:
        import importlib.util

        from nova.cli.commands.first_run import demo_next_steps

        console.print("\n" + demo_next_steps(outcome["session_id"],
                                             tui_installed=importlib.util.find_spec("textual") is not None),
                      markup=False, soft_wrap=True)


def run_task(
    settings: Settings, llm: Any, options: AgentOptions, prompt: str, *, quiet: bool = False,
    resume_id: str | None = None, strict: bool = False,
) -> dict[str, Any]:
    from nova.agent.calls import calls_report
    from nova.cli.progress import TerminalProgress
    from nova.cli.render import Timeline
    from nova.model import CallCount
    from nova.present.figures import Figures, footer_line

    bus = ev.EventBus()
    # Waits and retries on stderr (a spinner on a terminal, plain lines piped), never in --json.
    progress = TerminalProgress(sys.stderr, terminal=err_console.is_terminal)
    refused = RefusedCalls()
    bus.subscribe(refused)
    if not quiet:
        bus.subscribe(progress)  # first: it erases its line before the timeline prints
        # In a terminal the answer streams as it is written; piped, each message prints whole.
        bus.subscribe(Timeline(console, stream_text=console.is_terminal))
    session, history = _open_session(settings, options, prompt, resume_id, strict=strict)
    from nova.skills.runtime import turn_input

    try:
        agent = build_agent(settings, llm, options, bus=bus, session=session, session_id=session.id,
                            session_dir=session.dir, history=history)
        if not history:
            record_fixed_prompt(session, agent)
        # `/skill NAME [request]` is a turn with the skill's body loaded; other slash commands are Nova's.
        turn = turn_input(agent.extensions, prompt)
    except BaseException:  # an unknown skill, a disk that filled up: nothing was asked, so no session is kept
        _abandon(settings, session, new=resume_id is None)
        raise
    started = time.monotonic()
    if isinstance(turn, str) and prompt.lstrip().startswith("/"):
        try:
            return _slash_command(settings, options, prompt, agent, quiet=quiet)
        finally:
            session.close()
    answered = interrupted = discarded = False
    try:
        result = agent.run_turn(turn)
        answered = result.stop_reason != "error"
    except KeyboardInterrupt:
        interrupted = True
        agent.cancel.set()  # a tool still running in a worker thread stops at its next check
    finally:
        progress.close()
        try:
            try:
                agent.close()
            finally:
                session.close()  # may fail as the turn did (a full disk): the discard below runs anyway
        finally:
            if resume_id is None and not answered:
                discarded = _discard_if_unanswered(settings, session, interrupted=interrupted)
    if interrupted:
        _say_interrupted(session, discarded=discarded)
    # The same figures the TUI footer shows (`nova.present.figures`), for every call of this run: the
    # turn's steps and what ran beside them (a compaction summary, memory extraction and recall,
    # sub-agents), counted once the agent finished its background work.
    calls = agent.meter.tally()
    spent = sum(calls.values(), CallCount())
    figures = Figures.of(model=agent.model, status=agent.context_status(), usage=spent.usage,
                         cost=spent.cost_usd if spent.cost_known else None, calls=calls)
    used, limit, hit_rate = figures.used, figures.limit, figures.cache_hit_rate
    if not quiet:
        console.print(footer_line(figures))
        if (said := refused.summary()) is not None:
            console.print(said, style="bold yellow", markup=False, soft_wrap=True)
    return {
        "session_id": agent.session_id,
        "text": result.text,
        "stop_reason": result.stop_reason,
        "steps": result.steps,
        "usage": spent.usage.to_dict(),
        "cost_usd": figures.cost,
        "calls": calls_report(calls),
        "context_used": used,
        "context_limit": limit,
        "cache_hit_rate": hit_rate,
        "duration_s": round(time.monotonic() - started, 3),
        "refused": [c.to_dict() for c in refused.calls],
    }


def _abandon(settings: Settings, session: Any, *, new: bool) -> None:
    from nova.sessions.unanswered import discard_if_unanswered

    try:
        session.close()
    finally:
        if new:
            discard_if_unanswered(settings.home, session)


def _discard_if_unanswered(settings: Settings, session: Any, *, interrupted: bool = False) -> bool:
    from nova.sessions.unanswered import discard_if_unanswered

    discarded = discard_if_unanswered(settings.home, session)
    if discarded and not interrupted:
        err_console.print("nova: the run failed before the model answered, so no session was kept (run the "
                          "same command again once the cause below is fixed)", markup=False, soft_wrap=True)
    return discarded


def _say_interrupted(session: Any, *, discarded: bool) -> NoReturn:
    """Ctrl-C during a turn: one line saying what was kept and the command that goes on from there (an
    interrupted tool call is answered "interrupted" when the session is resumed), then exit 130."""
    from nova.cli.commands.exit_codes import EXIT_INTERRUPTED

    if discarded:
        line = "nova: interrupted before the model answered, so no session was kept"
    else:
        line = f'nova: interrupted; session {session.id} was kept. Resume it with: nova resume {session.id} "go on"'
    err_console.print(line, markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_INTERRUPTED)


def _slash_command(settings: Settings, options: AgentOptions, text: str, agent: Any, *,
                   quiet: bool) -> dict[str, Any]:
    """`/compact [focus]`, `/context`, `/memory`, `/remember TEXT` and the task-state commands (`/goal`,
    `/constraint`, `/approve` …) are answered by Nova itself, without a model call."""
    from nova.agent.context_runtime import ContextRuntime
    from nova.context.state import TASK_STATE_COMMANDS
    from nova.memory.config import parse_memory_config
    from nova.memory.slash import handle_memory_slash
    from nova.memory.store import MemoryStore

    session_id = agent.session_id
    command, _, rest = text.strip().partition(" ")
    runtime = agent.extensions.get(ContextRuntime)
    if command == "/compact":
        before = agent.context_tokens()
        changed = agent.compact(rest.strip())
        reply_text, ok = (f"compacted: {before:,} → {agent.context_tokens():,} tokens" if changed
                          else "nothing to compact"), True
    elif command == "/context" and runtime is not None:
        from nova.context.report import render_context

        reply_text, ok = render_context(runtime.last or runtime.compile(
            list(agent.history), system=agent.system_prompt, tools=agent.tools.specs())), True
    elif command in TASK_STATE_COMMANDS and runtime is not None:
        try:
            reply_text, ok = runtime.command(text.strip()), True
        except CommandError as exc:
            reply_text, ok = str(exc), False
    else:
        store = MemoryStore.for_workspace(home=settings.home, cwd=options.cwd)
        config = parse_memory_config(settings.section("memory"), source=f"{settings.config_file} [memory]")
        answer = handle_memory_slash(text.strip(), store=store, config=config, session_id=session_id)
        if answer is None:
            from nova.cli.commands.run_prompt import slash_commands_line

            raise NovaError(f"unknown command {command!r}: {slash_commands_line()}")
        reply_text, ok = answer.text, answer.ok
    if not quiet:
        console.print(reply_text, markup=False)
    return {"session_id": session_id, "text": reply_text, "stop_reason": "end_turn" if ok else "error",
            "steps": 0, "usage": {}, "cost_usd": 0.0, "calls": {}, "context_used": 0, "context_limit": 0,
            "cache_hit_rate": None, "duration_s": 0.0}


def _open_session(settings: Settings, options: AgentOptions, prompt: str,
                  resume_id: str | None, *, strict: bool = False) -> tuple[Any, list[Any]]:
    """A new recorded session, or a resumed one with its repaired history (SES-4, SES-5). Damage found
    on the way is one `nova: warning:` line each; with `strict` a damaged record refuses the resume."""
    from nova.sessions.export import latest_session_id, resume
    from nova.sessions.meta import title_from_prompt
    from nova.sessions.session import Session

    if resume_id is None:
        session = Session.create(settings.home, title=title_from_prompt(prompt), cwd=options.cwd,
                                 provider=settings.provider, model=settings.model,
                                 base_url=settings.base_url or "")
        for notice in session.notices:
            err_console.print(f"nova: warning: {notice}", markup=False, soft_wrap=True)
        return session, []
    if resume_id == "last":
        found = latest_session_id(settings.home)
        if found is None:
            raise NovaError(f"there is no recorded session in {settings.sessions_dir} to resume")
        resume_id = found
    resumed = resume(resume_id, home=settings.home, strict=strict)
    for notice in resumed.notices:
        err_console.print(f"nova: {notice}", markup=False, soft_wrap=True)
    if resumed.session.meta.provider in PROVIDERS:  # an imported session keeps naming its origin
        resumed.session.use_model(provider=settings.provider, model=settings.model, base_url=settings.base_url)
    return resumed.session, resumed.history
