"""The options `nova` takes before any command (`nova --provider demo`, `nova --provider demo run "…"`)
and how every command sees them.

The root callback stores them in the click context's `meta`, which every subcommand's context shares;
`global_overrides()` reads them back wherever settings are loaded. A command's own `--provider`
(`nova run --provider openai`) is more specific and wins over the global one.

Kept to typer alone: the root imports this module on every start.
"""

from __future__ import annotations

from typing import Any

try:  # recent typer ships its own copy of click; older releases used click itself
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer
    from click import get_current_context  # type: ignore[no-redef,assignment]

__all__ = ["global_overrides", "merge_overrides", "remember_global_options"]

_META_KEY = "nova.global_options"


def remember_global_options(meta: dict[str, Any], **values: str | None) -> None:
    """Keep the root's options (those given) for the subcommand that runs next."""
    meta[_META_KEY] = {key: value for key, value in values.items() if value is not None}


def global_overrides() -> dict[str, Any]:
    """The options given before the command (`nova --provider demo …`), empty outside a `nova` run."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return {}
    return dict(ctx.meta.get(_META_KEY) or {})


def merge_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """The global options under the command's own: a value the command was given wins."""
    merged = global_overrides()
    merged.update({key: value for key, value in overrides.items() if value is not None})
    return merged
