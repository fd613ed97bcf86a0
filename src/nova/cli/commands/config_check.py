"""One check of the whole configuration, run by every command that acts on it (`run`, `resume`,
`demo`, `serve`, the terminal UI) and by `nova config show`, so the two can never disagree: a config
that `run` refuses makes `config show` fail with the same message naming the key.

`nova.settings` checks the keys it owns while loading. The sections other modules own (`memory`,
`instructions`, `policy`, `server`, `mcpServers`, `mcp`, `store`), the permission rules (parsed by
the permission policy an agent is built with) and the settings that only matter when an agent is built
(the provider's base URL, the sandbox) were checked only when something happened to parse them, so
`config show` printed a config `run` then refused (`"deny": ["bash("]`, an MCP server without a
command, a `store` URL that is not PostgreSQL). Each is parsed here with its owner's own parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nova.agent.provider_factory import check_provider_settings
from nova.mcp.config import load_options, load_servers
from nova.memory.config import MemoryConfig, parse_memory_config
from nova.memory.instructions import InstructionsConfig, parse_instructions_config
from nova.server.config import ServerConfig, parse_server_config
from nova.sessions.backend import database_url
from nova.settings import Settings, config_str
from nova.tools.permissions import parse_rule

__all__ = ["CheckedConfig", "check_config"]


@dataclass(frozen=True, kw_only=True)
class CheckedConfig:
    memory: MemoryConfig
    instructions: InstructionsConfig
    server: ServerConfig
    policy_file: Path | None
    bwrap: str | None
    """The bubblewrap that will sandbox `bash`, when `sandbox` is on (required)."""


def check_config(settings: Settings) -> CheckedConfig:
    """Every section parsed by its owner, or the first `ConfigError` (naming file, section and key)."""
    where = settings.config_file
    for kind in ("allow", "deny", "ask"):
        for rule in getattr(settings.permissions, kind):
            parse_rule(rule, where=f"{where} [permissions.{kind}]")
    # The config's own servers and the client's knobs; a project's .mcp.json is checked where it is read.
    load_servers(settings.section("mcpServers"), config_source=str(where), project_root=None)
    load_options(settings.section("mcp"), source=f"{where} [mcp]")
    database_url(settings.home)
    policy = settings.section("policy")
    named = config_str(policy["file"], source=f"{where} [policy]", key="file") if policy.get("file") is not None else ""
    policy_file = Path(named).expanduser() if named else None
    check_provider_settings(settings)
    bwrap = None
    if settings.sandbox == "on":
        from nova.tools.policy.sandbox import require_bubblewrap

        bwrap = require_bubblewrap()
    return CheckedConfig(
        memory=parse_memory_config(settings.section("memory"), source=f"{where} [memory]"),
        instructions=parse_instructions_config(settings.section("instructions"), source=f"{where} [instructions]"),
        server=parse_server_config(settings.section("server"), source=f"{where} [server]"),
        policy_file=policy_file,
        bwrap=bwrap,
    )
