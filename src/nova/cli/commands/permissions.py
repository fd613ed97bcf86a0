"""`nova permissions check`: what the permission rules decide for one tool call, and why.

Mounted lazily by `nova.cli.main` as `nova permissions`. The policy is built exactly as `nova run` builds it
in the current directory (config rules, protected paths), without any `--allow`/`--yes` flag: the
answer is the rules' own, `allow`, `ask` or `deny`.
"""

# No `from __future__ import annotations`: typer reads the command signatures when the group runs.
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from nova.cli.commands.errors import user_errors
from nova.cli.commands.exit_codes import EXIT_USAGE
from nova.cli.commands.typer_classes import NovaCommand, command_group
from nova.errors import CommandError
from nova.present.text import terminal_safe

__all__ = ["app"]

app = command_group("Check what the permission rules decide for a tool call: allow, ask or deny, and why.")

_CALL_RE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_KEY_ARGUMENT = {"bash": "command", "read_file": "path", "write_file": "path", "edit_file": "path",
                 "grep": "path", "glob": "path"}


def _parse_call(text: str, known: list[str]) -> tuple[str, dict[str, Any]]:
    match = _CALL_RE.match(text)
    if match is None:
        raise CommandError(f"{text!r} is not `TOOL(argument)`, e.g. 'bash(git push origin)' or 'write_file(src/a.py)'")
    name, argument = match.group(1), match.group(2)
    if name not in known:
        raise CommandError(f"unknown tool {name!r}; built-in tools: {', '.join(sorted(known))}")
    if argument is None:
        return name, {}
    key = _KEY_ARGUMENT.get(name)
    if key is None:
        raise CommandError(f"{name} takes no single argument to check; known tools with one: "
                           f"{', '.join(sorted(_KEY_ARGUMENT))}")
    return name, {key: argument}


@app.command("check", cls=NovaCommand)
def check_command(
    call: Annotated[str, typer.Argument(help="The tool call, as `TOOL(argument)`: 'bash(git push)', "
                                             "'write_file(src/a.py)', 'read_file(.env)'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Print the decision the rules make for one tool call (allow, ask or deny), the rule that decided,
    and for `bash` each command the line runs, as the policy sees it.

    Examples:

        nova permissions check 'bash(git -C . push origin main)'

        nova permissions check 'bash(ls <(touch X))' --json

        nova permissions check 'write_file(.nova/memory/x.md)'

    `ask` means an interactive session asks the user, and a headless `nova run` refuses unless
    `--allow TOOL` or `--yes` is given (for a command that cannot be checked while deny rules apply to
    bash, only the user can approve it).
    """
    from nova.agent.builder import AgentOptions, build_policy
    from nova.cli.commands.cli_settings import settings_from_cli
    from nova.tools import default_registry
    from nova.tools.permissions import PermissionPolicy
    from nova.tools.policy.shell_parse import parse_command_line

    registry = default_registry()
    with user_errors(exit_code=EXIT_USAGE):  # a call that does not parse: the command line is wrong
        name, input = _parse_call(call, registry.names())
    with user_errors():
        tool = registry.get(name)
        assert tool is not None
        settings = settings_from_cli()
        cwd = Path.cwd().resolve()
        policy: PermissionPolicy = build_policy(settings, AgentOptions(cwd=cwd))
        verdict = policy.evaluate(tool, input, cwd=cwd)
        commands: list[dict[str, Any]] = []
        writes: list[dict[str, str]] = []
        command = input.get("command")
        if name == "bash" and isinstance(command, str) and command.strip():
            line = parse_command_line(command)
            commands = [{"exact": c.exact, "normalized": c.text, "notes": list(c.notes),
                         "unresolved": c.unresolved, "decision": policy.explain_command(c)} for c in line.commands]
            writes = [{"path": w.path, "via": w.via} for w in line.writes]
    report = {"tool": name, "input": input, "cwd": str(cwd), "decision": verdict.outcome, "rule": verdict.rule,
              "reason": verdict.reason, "user_only": verdict.user_only, "commands": commands, "writes": writes,
              "config": str(settings.config_file)}
    if as_json:
        typer.echo(terminal_safe(json.dumps(report, ensure_ascii=False, indent=2), json=True))
        return
    _say(f"decision: {verdict.outcome}")
    _say(f"rule:     {verdict.rule or '-'}")
    _say(f"reason:   {verdict.reason}")
    if verdict.outcome == "ask":
        _say("          (only the user can approve it: --allow and --yes do not cover it)" if verdict.user_only
             else f"          (interactive: the user is asked; headless: refused unless --allow {name} or --yes)")
    for index, item in enumerate(commands, start=1):
        _say(f"command {index}: {item['exact']}")
        if item["normalized"] != item["exact"]:
            _say(f"    runs as: {item['normalized']}")
        for note in item["notes"]:
            _say(f"    {note}")
        _say(f"    -> {item['decision']}")
    for write in writes:
        _say(f"writes: {write['path']} ({write['via']})")


def _say(text: str) -> None:
    """One line for a person: the command checked and why, made terminal-safe (it may be anyone's)."""
    typer.echo(terminal_safe(text))
