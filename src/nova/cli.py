"""The `nova` command. Environment variables are read here, at the edge, and nowhere deeper."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nova import __version__
from nova import events as ev
from nova.commands.errors import user_errors
from nova.errors import CommandError, NovaError
from nova.settings import Settings, describe_settings, load_settings

__all__ = ["app", "main"]

app = typer.Typer(
    name="nova",
    help="Nova: a context engine and agent harness for coding agents.\n\n"
    "Try it offline with `nova demo`; run a task with `nova run \"fix the failing test\"`.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    rich_markup_mode="markdown",
)
config_app = typer.Typer(help="Show the effective configuration and where each value came from.",
                         no_args_is_help=True)
app.add_typer(config_app, name="config")


def _mount_subcommands() -> None:
    from nova.commands import context, memory, replay, sessions

    app.add_typer(sessions.app, name="sessions")
    app.add_typer(memory.app, name="memory")
    app.command("rules")(memory.rules_command)
    app.command("replay")(replay.replay_command)
    app.command("context")(context.context_command)


_mount_subcommands()

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def settings_from_cli(**overrides: Any) -> Settings:
    settings = load_settings(env=dict(os.environ), overrides=overrides)
    for warning in settings.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    return settings


def _version(value: bool) -> None:
    if value:
        console.print(f"nova {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is None:
        if _can_open_tui():
            from nova.tui.launch import launch_tui

            with user_errors():
                launch_tui(settings_from_cli(), cwd=Path.cwd().resolve(), env=dict(os.environ))
            return
        console.print(ctx.get_help())


def _can_open_tui() -> bool:
    """`nova` alone opens the terminal UI in a terminal when the `tui` extra is installed; piped or
    without the extra it prints the help, as before."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    return importlib.util.find_spec("textual") is not None


# -- nova config -------------------------------------------------------------------------------------
@config_app.command("show")
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Print the effective configuration: every value and where it came from."""
    with user_errors():
        settings = settings_from_cli()
        rows = describe_settings(settings)
    if as_json:
        print(json.dumps({"config_file": str(settings.config_file),
                          "values": [{"key": k, "value": v, "source": s} for k, v, s in rows],
                          "warnings": list(settings.warnings)}, indent=2, default=str))
        return
    table = Table(title=f"Nova configuration ({settings.config_file})")
    table.add_column("key")
    table.add_column("value")
    table.add_column("source", style="dim")
    for key, value, source in rows:
        table.add_row(key, json.dumps(value) if not isinstance(value, str) else value, source)
    console.print(table)


# -- nova run ----------------------------------------------------------------------------------------
ProviderOpt = Annotated[
    str | None,
    typer.Option("--provider", help="anthropic, openai, openai-responses, compatible (any OpenAI-compatible "
                 "--base-url such as Ollama, vLLM, llama.cpp) or demo (offline scripted model)."),
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Model id, e.g. claude-sonnet-4-5 or gpt-5.")]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://localhost:11434/v1.")
]


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="Allow a tool that would otherwise need approval (repeatable), e.g. "
                     "--allow bash."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Allow every tool call the rules do not deny.")] = False,
    max_steps: Annotated[int, typer.Option(help="Stop after this many model calls.")] = 50,
    cwd: Annotated[Path | None, typer.Option(help="Working directory (default: the current one).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue a recorded session (an id, or 'last').")
    ] = None,
) -> None:
    """Run one task headless and print a timeline. Ends with context used, cost and cache hit rate.

    Write tools and bash need approval: pass `--allow bash`, `--allow write_file`… or `--yes`. Deny
    rules in the config (`permissions.deny`, e.g. `bash(git push*)`) always win.
    """
    from nova.app import AgentOptions
    from nova.providers.factory import make_provider

    with user_errors():
        settings = settings_from_cli(provider=provider, model=model, base_url=base_url)
        llm = make_provider(settings, dict(os.environ))
        workdir = (cwd or Path.cwd()).resolve()
        options = AgentOptions(cwd=workdir, allowed_tools=frozenset(allow or ()), yes=yes, max_steps=max_steps)
        outcome = _run_task(settings, llm, options, prompt, quiet=as_json, resume_id=resume)
    if as_json:
        print(json.dumps(outcome, indent=2))
    if outcome["stop_reason"] == "error":
        raise typer.Exit(1)


def _run_task(
    settings: Settings, llm: Any, options: Any, prompt: str, *, quiet: bool = False, resume_id: str | None = None
) -> dict[str, Any]:
    from nova.app import build_agent
    from nova.cli_render import Timeline, format_footer

    bus = ev.EventBus()
    if not quiet:
        # In a terminal the answer streams as it is written; piped, each message prints whole.
        bus.subscribe(Timeline(console, stream_text=console.is_terminal))
    session, history = _open_session(settings, options, prompt, resume_id)
    agent = build_agent(settings, llm, options, bus=bus, session=session, session_id=session.id,
                        session_dir=session.dir)
    agent.history = list(history)
    if not history:
        session.record_event("system_prompt", {"text": agent.system_prompt})
    started = time.monotonic()
    if prompt.lstrip().startswith("/"):
        try:
            return _slash_command(settings, options, prompt, agent, quiet=quiet)
        finally:
            session.close()
    try:
        result = agent.run_turn(prompt)
    finally:
        agent.close()
        session.close()
    status = agent.context_status()
    used, limit, window = status.used, status.limit, status.window
    seen = result.usage.context_tokens
    hit_rate = result.usage.cache_read_tokens / seen if seen else None
    if not quiet:
        console.print(format_footer(used=used, limit=limit, window=window, cost=result.cost_usd,
                                    cache_hit_rate=hit_rate))
    return {
        "session_id": agent.session_id,
        "text": result.text,
        "stop_reason": result.stop_reason,
        "steps": result.steps,
        "usage": result.usage.to_dict(),
        "cost_usd": result.cost_usd,
        "context_used": used,
        "context_limit": limit,
        "cache_hit_rate": hit_rate,
        "duration_s": round(time.monotonic() - started, 3),
    }


def _slash_command(settings: Settings, options: Any, text: str, agent: Any, *, quiet: bool) -> dict[str, Any]:
    """`/compact [focus]`, `/context`, `/memory`, `/remember TEXT` and the task-state commands (`/goal`,
    `/constraint`, `/approve` …) are answered by Nova itself, without a model call."""
    from nova.context.runtime import runtime_for
    from nova.context.state import TASK_STATE_COMMANDS
    from nova.memory.config import parse_memory_config
    from nova.memory.slash import handle_memory_slash
    from nova.memory.store import MemoryStore

    session_id = agent.session_id
    command, _, rest = text.strip().partition(" ")
    runtime = runtime_for(agent)
    if command == "/compact":
        before = agent.context_tokens()
        changed = agent.compact(rest.strip())
        reply_text, ok = (f"compacted: {before:,} → {agent.context_tokens():,} tokens" if changed
                          else "nothing to compact"), True
    elif command == "/context" and runtime is not None:
        from nova.commands.context import render_context

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
            raise NovaError(f"unknown command {command!r}: the commands are /compact [FOCUS], /context, "
                            f"/memory, /remember TEXT and {', '.join(sorted(TASK_STATE_COMMANDS))}")
        reply_text, ok = answer.text, answer.ok
    if not quiet:
        console.print(reply_text, markup=False)
    return {"session_id": session_id, "text": reply_text, "stop_reason": "end_turn" if ok else "error",
            "steps": 0, "usage": {}, "cost_usd": 0.0, "context_used": 0, "context_limit": 0,
            "cache_hit_rate": None, "duration_s": 0.0}


def _open_session(settings: Settings, options: Any, prompt: str, resume_id: str | None) -> tuple[Any, list[Any]]:
    """A new recorded session, or a resumed one with its repaired history (SES-4, SES-5)."""
    from nova.sessions.export import latest_session_id, resume
    from nova.sessions.session import Session

    if resume_id is None:
        session = Session.create(settings.home, title=" ".join(prompt.split())[:80], cwd=options.cwd,
                                 provider=settings.provider, model=settings.model)
        return session, []
    if resume_id == "last":
        found = latest_session_id(settings.home)
        if found is None:
            raise NovaError(f"there is no recorded session in {settings.sessions_dir} to resume")
        resume_id = found
    resumed = resume(resume_id, home=settings.home)
    for notice in resumed.notices:
        err_console.print(f"nova: {notice}", markup=False, soft_wrap=True)
    return resumed.session, resumed.history


@app.command("resume")
def resume_cmd(
    session_id: Annotated[str, typer.Argument(help="The session to continue (see `nova sessions list`), or 'last'.")],
    prompt: Annotated[str, typer.Argument(help="The next request in that session.")],
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Allow a tool (repeatable).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Allow every tool call the rules do not deny.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
) -> None:
    """Continue a recorded session with a new request, on any provider (the record is provider-neutral).

    Only the records after the last compaction are read back; an interrupted tool call is answered
    with an "interrupted" result before the first request, so the provider never sees a broken pair.
    """
    run(prompt, provider=provider, model=model, base_url=base_url, allow=allow, yes=yes, max_steps=50, cwd=None,
        as_json=as_json, resume=session_id)


# -- nova serve --------------------------------------------------------------------------------------
@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; loopback by default.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Allow a tool (repeatable).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Allow every tool call the rules do not deny.")] = False,
    cwd: Annotated[Path | None, typer.Option(help="Working directory of new sessions (default: the current one).")] = None,
    print_token: Annotated[bool, typer.Option("--print-token", help="Print the API token and exit.")] = False,
) -> None:
    """Serve the HTTP API (AI SDK UI message stream) and the web page.

    Every route but `/health` needs `Authorization: Bearer <token>`; the token is made on first start,
    printed once and kept in `<NOVA_HOME>/server-token` (mode 0600). Open the printed `/?token=…` link.
    """
    from nova.server.token import load_or_create_token

    with user_errors():
        settings = settings_from_cli(provider=provider, model=model, base_url=base_url)
        if print_token:
            token, _ = load_or_create_token(settings.home)
            print(token)
            return
        if not all(importlib.util.find_spec(name) for name in ("fastapi", "uvicorn")):
            raise NovaError("the server needs its extra: pip install 'nova-agent[server]'")
        from nova.server.serve import ServeOptions, run_server
        options = ServeOptions(host=host, port=port, cwd=(cwd or Path.cwd()).resolve(),
                               allowed_tools=frozenset(allow or ()), yes=yes)
        run_server(settings, options, say=lambda line: console.print(line, markup=False, soft_wrap=True))


# -- nova demo ---------------------------------------------------------------------------------------
@app.command()
def demo(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Where to write the demo project (default: a temporary directory).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
) -> None:
    """Run the offline demo: a scripted model fixes a failing test in a generated project, with real tools."""
    from nova.app import AgentOptions
    from nova.demo import DEMO_PROMPT, make_demo_project, make_demo_provider

    with user_errors():
        settings = settings_from_cli(provider="demo", model="nova-demo")
        root = directory or Path(tempfile.mkdtemp(prefix="nova-demo-"))
        project = make_demo_project(root.resolve())
        if not as_json:
            console.print(f"[bold]Nova demo[/] — offline, scripted model, real tools. Project: {project}\n")
        options = AgentOptions(cwd=project, yes=True, max_steps=20)
        outcome = _run_task(settings, make_demo_provider(), options, DEMO_PROMPT, quiet=as_json)
        outcome["project"] = str(project)
    if as_json:
        print(json.dumps(outcome, indent=2))


def main() -> None:
    # Library warnings (a compaction rebuilt, a summarizer failing) reach the user as one plain line.
    logging.basicConfig(level=logging.WARNING, format="nova: %(levelname)s: %(message)s", stream=sys.stderr)
    try:
        app()
    except BrokenPipeError:  # `nova … | head` must not print a traceback
        sys.stderr.close()


if __name__ == "__main__":
    main()
