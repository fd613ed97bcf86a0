"""The `nova` command: its commands, options and help texts. Environment variables are read at the
edge (here and in `nova.cli.commands`), nowhere deeper.

Start-up is kept short (`nova --help` and `nova --version` import typer and little else): each command
body imports its implementation from `nova.cli.commands` when it runs, and the subcommands that live
entirely in `nova.cli.commands` are mounted on first use by `LazyGroup`. `tests/test_cli_startup.py` checks
both, and that each lazy command's help line below is the command's own.
"""

# No `from __future__ import annotations` in this module: typer reads every command's signature on each
# start, and evaluating string annotations (each building its `typer.Option` anew) took ~12 ms of it.
import os
import sys
from pathlib import Path
from typing import Annotated, ClassVar

import typer

from nova.cli.commands.typer_classes import HELP_MARKUP, HelpGroup, LazyCommand, LazyGroup, NovaCommand
from nova.version import __version__

__all__ = ["app", "main"]


class _NovaGroup(LazyGroup):
    # Each help line is the first paragraph of the command's own help (a test compares them).
    lazy_commands: ClassVar[dict[str, LazyCommand]] = {
        "sessions": LazyCommand("nova.cli.commands.sessions:app",
                                "Recorded sessions: list, show, search, export, remove, import, doctor."),
        "context": LazyCommand("nova.cli.commands.context:context_command",
                               "What is in a session's context: every segment with its class, tokens, source "
                               "and reason."),
        "replay": LazyCommand("nova.cli.commands.replay:replay_command",
                              "Replay a recorded session as if the agent had used this context policy."),
        "eval": LazyCommand("nova.cli.commands.eval:eval_command",
                            "Measure context policies on recorded sessions (evidence, precision, cache, cost, "
                            "latency) and memory on scripted cases (usefulness, poisoning)."),
        "memory": LazyCommand("nova.cli.commands.memory:app",
                              "Long-term memory: list, inspect, search, add, edit, approve, forget, promote, "
                              "consolidate, undo."),
        "permissions": LazyCommand("nova.cli.commands.permissions:app",
                                   "Check what the permission rules decide for a tool call: allow, ask or deny, "
                                   "and why."),
        "skills": LazyCommand("nova.cli.commands.skills:app", "Skills: list, show, test, retire and roll back versions."),
        "mcp": LazyCommand("nova.cli.commands.mcp:app",
                           "MCP servers: list each configured server, its state and its tools."),
        "trust": LazyCommand("nova.cli.commands.trust:trust_command",
                             "List what this project would run (its .mcp.json servers, skills with scripts) and "
                             "trust it."),
        "rules": LazyCommand("nova.cli.commands.memory:rules_command",
                             "Show the resolved instruction chain: each file, who imported it, its tokens, and "
                             "what was skipped."),
    }


app = typer.Typer(
    name="nova",
    cls=_NovaGroup,
    help="Nova: a context engine and agent harness for coding agents.\n\n"
    "Try it offline with `nova demo` (or `nova --provider demo` for the terminal UI on the offline demo "
    "model); run a task with `nova run \"fix the failing test\"`. --provider, --model and --base-url given "
    "before a command apply to it.",
    epilog="Exit status: 0 done, 1 error, 2 usage error, 3 refused, 130 interrupted (Ctrl-C); the table is in "
    "docs/cli.md.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    rich_markup_mode=HELP_MARKUP,
)
config_app = typer.Typer(help="Show the effective configuration and where each value came from; set or "
                         "unset one key.",
                         no_args_is_help=True, cls=HelpGroup)
app.add_typer(config_app, name="config")


# Given before a command they apply to every command (`nova --provider demo run "…"`); given after it
# (`nova run --provider openai "…"`) they apply to that command and win.
ProviderOpt = Annotated[
    str | None,
    typer.Option("--provider", help="anthropic, openai, openai-responses, compatible (any OpenAI-compatible "
                 "--base-url such as Ollama, vLLM, llama.cpp) or demo (offline scripted model). Default: "
                 "NOVA_PROVIDER, else the config's provider (`nova config set provider NAME`)."),
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Model id, e.g. claude-sonnet-4-5 or gpt-5 "
                                              "(default: NOVA_MODEL, else the config's model).")]
StrictOpt = Annotated[
    bool, typer.Option("--strict", help="With --resume: refuse a session with a damaged record instead of "
                       "skipping it with a warning.")
]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://localhost:11434/v1 "
                             "(default: NOVA_BASE_URL, else the config's base_url).")
]


def _existing_folder(value: Path | None) -> Path | None:
    """`--cwd` must name a folder that exists: a typo would otherwise run the agent nowhere useful."""
    if value is not None and not value.is_dir():
        what = "is not a folder" if value.exists() else "does not exist"
        raise typer.BadParameter(f"{str(value)!r} {what}; name an existing folder, or leave --cwd out to use "
                                 "the current one")
    return value


def _positive_steps(value: int) -> int:
    if value < 1:
        raise typer.BadParameter(f"{value} is not a number of model calls; give 1 or more (default 50)")
    return value


def _port(value: int) -> int:
    if not 0 <= value <= 65535:
        raise typer.BadParameter(f"{value} is not a TCP port; give 1-65535 (default 8765), or 0 for any free port")
    return value


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nova {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
) -> None:
    from nova.cli.commands.global_options import remember_global_options

    remember_global_options(ctx.meta, provider=provider, model=model, base_url=base_url)
    if ctx.invoked_subcommand is None:
        if _in_terminal():
            from nova.cli.commands.first_run import require_tui_extra

            require_tui_extra(ctx.get_help())
            from nova.cli.commands.cli_settings import settings_from_cli
            from nova.cli.commands.config_check import check_config
            from nova.cli.commands.errors import user_errors
            from nova.tui.launch import launch_tui

            with user_errors():
                settings = settings_from_cli()
                check_config(settings)
                launch_tui(settings, cwd=Path.cwd().resolve(), env=dict(os.environ))
            return
        typer.echo(ctx.get_help())


def _in_terminal() -> bool:
    """`nova` alone opens the terminal UI in a terminal (without the `tui` extra it says how to install
    it); piped, it prints the help."""
    return sys.stdin.isatty() and sys.stdout.isatty()


# -- nova config -------------------------------------------------------------------------------------
@config_app.command("show", cls=NovaCommand)
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Print the effective configuration: every value and where it came from."""
    from nova.cli.commands.config import config_show_command

    config_show_command(as_json=as_json)


@config_app.command("set", cls=NovaCommand)
def config_set(
    key: Annotated[str, typer.Argument(help="provider, model, base_url, api_key_env, context_window, … or "
                                       "SECTION.KEY such as compaction.summary_keep_tokens.")],
    value: Annotated[str, typer.Argument(help="The value: text, a number, true/false or JSON.")],
) -> None:
    """Set one key in config.json, e.g. `nova config set provider demo`. API keys are never stored: export them.

    The edited file is checked as `nova run` checks it before it is written.
    """
    from nova.cli.commands.config import config_set_command

    config_set_command(key, value)


@config_app.command("unset", cls=NovaCommand)
def config_unset(key: Annotated[str, typer.Argument(help="The key to remove from config.json.")]) -> None:
    """Remove one key from config.json, so its default (or the environment) applies again."""
    from nova.cli.commands.config import config_unset_command

    config_unset_command(key)


# -- nova run ----------------------------------------------------------------------------------------
SandboxOpt = Annotated[
    bool | None,
    typer.Option("--sandbox/--no-sandbox", help="Run bash commands inside bubblewrap (Linux): only the project "
                 "is writable, secrets hidden, no network unless sandbox_network is set. Default: the config's "
                 "`sandbox`."),
]


@app.command(cls=NovaCommand)
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
    max_steps: Annotated[int, typer.Option(callback=_positive_steps, help="Stop after this many model calls.")] = 50,
    cwd: Annotated[Path | None, typer.Option(callback=_existing_folder, help="Working directory (default: the "
                                             "current one; with --resume, the session's own folder).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue a recorded session (an id, or 'last').")
    ] = None,
    strict: StrictOpt = False,
    sandbox: SandboxOpt = None,
) -> None:
    """Run one task and print a timeline. Ends with context used, cost and cache hit rate.

    Write tools and bash need approval. In a terminal Nova asks, one key: y (once), a (for this session),
    n (deny). In a script (stdin or stdout not a terminal) pass `--allow bash`, `--allow write_file`… or
    `--yes`; without them such calls are refused. Deny rules in the config (`permissions.deny`, e.g.
    `bash(git push*)`) always win.

    Exit status: 0 done; 1 error; 2 usage error; 3 done, but tool calls were refused (listed at the end,
    and under "refused" with --json); 130 interrupted (Ctrl-C: the session is kept, and the last line
    says how to resume it). The table is in docs/cli.md.

    A run that fails before the model answers (no key, server unreachable) keeps no session.
    """
    from nova.cli.commands.run import run_command

    run_command(prompt, provider=provider, model=model, base_url=base_url, allow=allow, yes=yes,
                max_steps=max_steps, cwd=cwd, as_json=as_json, resume=resume, strict=strict,
                sandbox=sandbox)


@app.command("resume", cls=NovaCommand)
def resume_cmd(
    session_id: Annotated[str | None, typer.Argument(
        metavar="SESSION_ID", show_default=False,
        help="The session to continue (see `nova sessions list`), or 'last'. Left out at a terminal: "
             "choose from this project's recent sessions.")] = None,
    prompt: Annotated[str | None, typer.Argument(
        metavar="PROMPT", show_default=False,
        help="The next request in that session (asked for at a terminal when left out).")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Allow a tool (repeatable).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Allow every tool call the rules do not deny.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
    strict: StrictOpt = False,
    sandbox: SandboxOpt = None,
    cwd: Annotated[Path | None, typer.Option(callback=_existing_folder, help="Run in this folder instead of the "
                                             "one the session was recorded in.")] = None,
) -> None:
    """Continue a recorded session with a new request, on any provider (the record is provider-neutral).

    It runs in the folder the session was recorded in. When you are elsewhere and stdin is a terminal,
    Nova asks which folder to use; in a script it uses the recorded one, and refuses (exit 3) when that
    folder is gone. `--cwd DIR` chooses without asking.

    Only the records after the last compaction are read back; an interrupted tool call is answered
    with an "interrupted" result before the first request, and in the record, so neither the provider
    nor a reader of the session sees a call without its result.
    """
    from nova.cli.commands.resume_picker import complete_resume
    from nova.cli.commands.run import run_command

    session_id, prompt = complete_resume(session_id, prompt, cwd=cwd)
    run_command(prompt, provider=provider, model=model, base_url=base_url, allow=allow, yes=yes, max_steps=50,
                cwd=cwd, as_json=as_json, resume=session_id, strict=strict,
                sandbox=sandbox, ask_where=True)


# -- nova serve --------------------------------------------------------------------------------------
@app.command(cls=NovaCommand)
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; loopback by default.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(callback=_port, help="Port to listen on.")] = 8765,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Allow a tool (repeatable).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Allow every tool call the rules do not deny.")] = False,
    cwd: Annotated[Path | None, typer.Option(callback=_existing_folder,
                                             help="Working directory of new sessions (default: the current one).")] = None,
    print_token: Annotated[bool, typer.Option("--print-token", help="Print the API token and exit.")] = False,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes on this port; more than one needs "
                                                       "PostgreSQL (NOVA_DATABASE_URL).")] = 1,
) -> None:
    """Serve the HTTP API (AI SDK UI message stream) and the web page.

    Every route but `/health` needs `Authorization: Bearer <token>`; the token is made on first start,
    printed once and kept in `<NOVA_HOME>/server-token` (mode 0600). Open the printed `/?token=…` link.
    A tool call that needs approval waits for the page's Allow / Deny (or `POST
    /api/sessions/{id}/approvals/{call_id}`), then is denied after `server.approval_timeout_s` (300 s).
    """
    from nova.cli.commands.serve import serve_command

    serve_command(host=host, port=port, provider=provider, model=model, base_url=base_url, allow=allow, yes=yes,
                  cwd=cwd, print_token=print_token, workers=workers)


# -- nova demo ---------------------------------------------------------------------------------------
@app.command(cls=NovaCommand)
def demo(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Where to write the demo project (default: a temporary directory).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
) -> None:
    """Run the offline demo: a scripted model fixes a failing test in a generated project, with real tools."""
    from nova.cli.commands.run import demo_command

    demo_command(directory=directory, as_json=as_json)


def main() -> None:
    import logging

    # Library warnings (a compaction rebuilt, a summarizer failing) reach the user as one plain line.
    logging.basicConfig(level=logging.WARNING, format="nova: %(levelname)s: %(message)s", stream=sys.stderr)
    try:
        app()
    except BrokenPipeError:  # `nova … | head` must not print a traceback
        sys.stderr.close()


if __name__ == "__main__":
    main()
