"""`nova config show`: every effective configuration value and where it came from."""

from __future__ import annotations

import json

from nova.commands.cli_settings import settings_from_cli
from nova.commands.config_check import check_config
from nova.commands.errors import user_errors
from nova.settings import describe_settings

__all__ = ["config_show_command"]


def config_show_command(*, as_json: bool) -> None:
    with user_errors():
        settings = settings_from_cli()
        # The same check `run` makes, so a config shown here without an error is one `run` accepts.
        check_config(settings)
        from nova.context.budget import budget_for

        budget = budget_for(settings)
        # What the budget derived from the window (the keys above are the seeds' numbers for 200k).
        rows = describe_settings(settings, derived=[
            ("context_window (effective)", budget.window),
            ("compaction threshold (effective)", budget.threshold),
            ("compaction reserve (effective)", budget.reserve),
            ("compaction hard line (effective)", budget.hard_line),
            ("compaction kept tail (effective)", budget.keep_tokens),
            ("spill.max_result_chars (effective)", budget.spill.max_result_chars),
            ("one message's share (effective)", budget.message_share),
        ])
    if as_json:
        print(json.dumps({"config_file": str(settings.config_file),
                          "values": [{"key": k, "value": v, "source": s} for k, v, s in rows],
                          "warnings": list(settings.warnings)}, indent=2, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Nova configuration ({settings.config_file})")
    table.add_column("key")
    table.add_column("value")
    table.add_column("source", style="dim")
    for key, value, source in rows:
        table.add_row(key, json.dumps(value) if not isinstance(value, str) else value, source)
    Console(highlight=False).print(table)
