"""`nova config show`: every effective configuration value and where it came from, then each provider
with whether its key is set and how to use it. `nova config set` / `unset`: edit `config.json`, checked
exactly as `nova run` checks it before anything is written."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from nova.cli.commands.cli_settings import settings_from_cli
from nova.cli.commands.config_check import check_config
from nova.cli.commands.errors import user_errors
from nova.cli.commands.person import person_only
from nova.errors import ConfigError
from nova.present.text import terminal_safe
from nova.settings import (
    OWNED_SECTIONS,
    TOP_LEVEL_KEYS,
    config_path,
    describe_settings,
    load_settings,
    nova_home,
)

__all__ = ["config_set_command", "config_show_command", "config_unset_command"]


def config_show_command(*, as_json: bool) -> None:
    from nova.agent.provider_factory import key_status

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
    # Only whether each key variable holds something is looked at; no part of a key is ever shown.
    providers = key_status(settings, os.environ)
    if as_json:
        print(json.dumps({"config_file": str(settings.config_file),
                          "values": [{"key": k, "value": v, "source": s} for k, v, s in rows],
                          "providers": [{"provider": p.provider, "current": p.current,
                                         "key_variable": p.key_variable, "key_set": p.key_set,
                                         "how_to_set": p.how_to_set} for p in providers],
                          "warnings": list(settings.warnings)}, indent=2, default=str))
        return
    from rich.markup import escape
    from rich.table import Table

    from nova.present.terminal import terminal_console

    console = terminal_console(highlight=False)
    table = Table(title=f"Nova configuration ({settings.config_file})")
    # A key is what `nova config set` takes: it gets the width of the longest key where the terminal has
    # room (rich would share the room out evenly and split it), goes on in the next line where it has not,
    # and is never cut to "compaction.summary_reserve_toke…"; so are values and sources.
    longest_key = max((len(key) for key, _, _ in rows), default=1)
    table.add_column("key", overflow="fold", width=min(longest_key, max(20, console.width - 38)))
    table.add_column("value", overflow="fold")
    table.add_column("source", style="dim", overflow="fold")
    for key, value, source in rows:
        table.add_row(escape(key), escape(json.dumps(value) if not isinstance(value, str) else value), escape(source))
    console.print(table)

    keys = Table(title="Providers")
    keys.add_column("provider")
    keys.add_column("API key")
    keys.add_column("to use it")
    for row in providers:
        status = ("not needed" if row.key_variable is None
                  else f"{row.key_variable} {'set' if row.key_set else 'not set'}")
        keys.add_row(escape(row.provider + (" (in use)" if row.current else "")), escape(status), escape(row.how_to_set))
    console.print(keys)
    current = next(p for p in providers if p.current)
    if current.key_variable and not current.key_set:
        console.print(f"Nova uses {current.provider}, whose key is not set: export {current.key_variable}=... "
                      f"or try the offline demo model with `nova --provider demo`.", markup=False, soft_wrap=True)


# -- nova config set / unset -------------------------------------------------------------------------
# Keys whose value is text even when it reads as a number ("model": "4").
_TEXT_KEYS = {"provider", "model", "base_url", "api_key_env"}
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names a key would be pasted under (api_key, anthropic_api_key, token …); `*_tokens` are sizes.
_SECRET_NAME = re.compile(r"(?:.*_)?(?:api_?key|apikey|secret|password|token)", re.IGNORECASE)


def _check_key(key: str) -> tuple[str, str | None]:
    """(top-level key, key inside its section or None), or a `ConfigError` saying what can be set."""
    if _SECRET_NAME.fullmatch(key.rpartition(".")[2]):
        raise ConfigError(
            f"{key!r}: API keys are never kept in the config file. Export the key in your shell "
            "(export ANTHROPIC_API_KEY=..., export OPENAI_API_KEY=...), or name the variable that holds it "
            "with `nova config set api_key_env NAME`."
        )
    section, _, name = key.partition(".")
    if not name and section in TOP_LEVEL_KEYS:
        return section, None
    if name and section in TOP_LEVEL_KEYS | OWNED_SECTIONS and "." not in name:
        return section, name
    top = ", ".join(sorted(TOP_LEVEL_KEYS))
    raise ConfigError(f"unknown key {key!r}: set one of {top}, or SECTION.KEY for a key of a section "
                      f"(e.g. compaction.summary_keep_tokens, permissions.allow)")


def _value_of(key: str, text: str) -> Any:
    """The value as the file will hold it: JSON when it reads as JSON (200000, true, ["a", "b"]), the
    text itself otherwise, and always text for the keys that are names."""
    if key in _TEXT_KEYS:
        if key == "api_key_env" and not _VARIABLE_NAME.fullmatch(text):
            raise ConfigError(f"api_key_env names the environment variable that holds the key, e.g. "
                              f"MY_GATEWAY_KEY; {len(text)} characters that are not a variable name were given "
                              "(the key itself belongs in that variable, never in the config file)")
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _write_checked(data: dict[str, Any], what: str) -> None:
    """Check the edited config exactly as `nova run` would, then replace the file atomically (0600)."""
    from nova.fs.private import private_dir, replace_private_file

    home = nova_home(os.environ)
    path = config_path(home)
    settings = load_settings(home=home, env={}, file_data=data)
    check_config(settings)
    if not home.exists():
        private_dir(home)
    replace_private_file(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    print(terminal_safe(f"{what} in {path}"))


def config_set_command(key: str, value: str) -> None:
    from nova.settings import read_config_file

    with user_errors(os_errors=True):
        person_only("nova config set")
        top, name = _check_key(key)
        parsed = _value_of(name or top, value)
        data = read_config_file(config_path(nova_home(os.environ)))
        if name is None:
            data[top] = parsed
        else:
            section = data.setdefault(top, {})
            if not isinstance(section, dict):
                raise ConfigError(f"{top!r} in the config file is not an object; fix or remove it first")
            section[name] = parsed
        _write_checked(data, f"set {key} = {json.dumps(parsed, ensure_ascii=False)}")


def config_unset_command(key: str) -> None:
    from nova.settings import read_config_file

    with user_errors(os_errors=True):
        person_only("nova config unset")
        top, name = _check_key(key)
        data = read_config_file(config_path(nova_home(os.environ)))
        holder = data if name is None else data.get(top)
        field = top if name is None else name
        if not isinstance(holder, dict) or field not in holder:
            print(terminal_safe(f"{key} is not set in the config file; nothing changed"))
            return
        del holder[field]
        _write_checked(data, f"removed {key}")
