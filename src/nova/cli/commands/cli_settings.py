"""Settings as every `nova` command loads them: the environment is read here, at the edge, the options
given before the command (`nova --provider demo …`) count as flags, and each configuration warning is
printed to stderr as one line."""

from __future__ import annotations

import os
from typing import Any

from nova.settings import Settings, load_settings

__all__ = ["settings_from_cli"]


def settings_from_cli(**overrides: Any) -> Settings:
    """Settings for this command: its own flags (`overrides`) over the options given before it
    (`nova --provider demo …`), over the environment, over the config file."""
    from nova.cli.commands.global_options import merge_overrides

    settings = load_settings(env=dict(os.environ), overrides=merge_overrides(overrides))
    if settings.warnings:
        from rich.markup import escape

        from nova.present.terminal import terminal_console

        err_console = terminal_console(stderr=True, highlight=False)
        for warning in settings.warnings:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    return settings
