"""`nova mcp list`: each configured MCP server, its state and its tools by their Nova names.

Mounted lazily by `nova.cli.main` as `nova mcp`. Servers are read as a session reads them (the config's
`mcpServers` over the project's `.mcp.json`) and started, so the state shown is what a session gets now.
"""

# No `from __future__ import annotations`: typer reads the command signatures when the group runs.
import json
from pathlib import Path
from typing import Annotated

import typer

from nova.cli.commands.errors import user_errors
from nova.cli.commands.typer_classes import NovaCommand, command_group
from nova.present.text import terminal_safe

__all__ = ["app"]

app = command_group("MCP servers: list each configured server, its state and its tools.")


@app.command("list", cls=NovaCommand)
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List each configured MCP server, its state (ready, failed ...) and its tools as `mcp__server__tool`."""
    from nova.cli.commands.cli_settings import settings_from_cli
    from nova.context.budget import budget_for
    from nova.mcp.setup import catalog_for, configured_servers
    from nova.tokens import counter_for_model

    with user_errors():
        settings = settings_from_cli()
        cwd = Path.cwd()
        servers = configured_servers(settings, cwd)
        if not servers:
            if as_json:
                print(json.dumps({"servers": [], "on_demand": False, "definition_tokens": 0}, indent=2))
            else:
                typer.echo(f"No MCP servers configured: add `mcpServers` to {settings.config_file} or a "
                           ".mcp.json at the project root.")
            return
        catalog = catalog_for(settings, cwd, window=budget_for(settings).window,
                              counter=counter_for_model(settings.model), strict=True)
        assert catalog is not None
        try:
            statuses = catalog.status()
            document = {"servers": [s.to_dict() for s in statuses], "on_demand": catalog.on_demand,
                        "definition_tokens": catalog.definition_tokens()}
        finally:
            catalog.close()
    if as_json:
        print(json.dumps(document, indent=2))
        return
    for status in statuses:
        line = f"{status.name} ({status.transport}): {status.state}, {len(status.tools)} tool(s)"
        _say(line + (f" — {status.error}" if status.error and status.state != "ready" else ""))
        for name in status.tools:
            _say(f"  {name}")
    mode = "on demand (mcp_search, mcp_call)" if catalog.on_demand else "all definitions sent"
    _say(f"catalog: {document['definition_tokens']:,} tokens of definitions; {mode}")


def _say(text: str) -> None:
    """One line for a person: a server's names and errors, made terminal-safe (they are the server's words)."""
    typer.echo(terminal_safe(text))
