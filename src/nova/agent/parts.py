"""The typed parts an `Agent` is built from, beside the budget (`nova.context.budget.ContextBudget`), the
session's one token ledger (`nova.tokens.TokenLedger`), the session link (`nova.sessions.link.SessionLink`)
and the extensions (`nova.context.extensions.Extension`).

`nova.agent.builder.build_agent` makes each of them from the settings; a test or an embedding program
that builds an agent by hand makes the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nova.model import CacheHints
from nova.providers.base import Provider
from nova.tools.base import ToolRegistry
from nova.tools.permissions import PermissionPolicy

__all__ = ["ModelBinding", "RunLimits", "Toolbox"]


@dataclass(frozen=True, kw_only=True)
class ModelBinding:
    """Who answers the agent's requests, and the prompt-cache breakpoints every request asks for."""

    provider: Provider
    name: str
    """The model asked for (a request may be answered by a dated version of it)."""
    cache: CacheHints = field(default_factory=CacheHints)


@dataclass(frozen=True, kw_only=True)
class Toolbox:
    """The tools the model may call, the permission policy every call passes first, and the directory
    they work in (the policy judges paths against it)."""

    tools: ToolRegistry
    policy: PermissionPolicy
    cwd: Path


@dataclass(frozen=True, kw_only=True)
class RunLimits:
    """Bounds on one user turn."""

    max_steps: int = 50
    """Model calls in one turn before it stops with `max_steps`."""
    tool_timeout_s: float = 120.0
    """The time each tool call is given (`ToolContext.timeout_s`)."""
    max_output_tokens: int = 8192
    """The most each model call may answer with."""

