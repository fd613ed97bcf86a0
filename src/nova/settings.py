"""Configuration: immutable value objects read from `~/.nova/config.json` (NOVA_HOME overrides `~/.nova`).

Each value remembers where it came from (`default`, the config file, an environment variable or a
command-line flag) so `nova config show` can explain the effective configuration. Environment
variables are read only at the edges (CLI, server): `load_settings(env=...)` takes them as an argument.

A malformed file or a wrong-typed value raises `ConfigError` with one message naming the file, the key,
the bad value and the expected type; nothing here ever shows a traceback to a user.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from nova.errors import ConfigError, FileRefused

__all__ = [
    "SANDBOX_MODES",
    "CompactionConfig",
    "PermissionsConfig",
    "SandboxMode",
    "Settings",
    "SpillConfig",
    "_parse_compaction_config",
    "config_error",
    "config_float",
    "config_int",
    "config_path",
    "config_str",
    "config_str_list",
    "load_settings",
    "nova_home",
]

Warn = Callable[[str], None]

PROVIDERS = ("anthropic", "openai", "openai-responses", "compatible", "demo")
DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5",
    "openai-responses": "gpt-5",
    "compatible": "llama3.1",
    "demo": "nova-demo",
}


def nova_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    value = env.get("NOVA_HOME")
    return Path(value).expanduser() if value else Path.home() / ".nova"


def config_path(home: Path) -> Path:
    return home / "config.json"


# -- typed conversion with clear errors ---------------------------------------------------------------
# Every section parser (here and in the packages that own a section: memory, instructions, the server)
# converts its values with these, so a wrong value reads the same wherever it is: the file and section
# (`source`), the key, the value as written, and what was expected.
def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def config_error(source: str, key: str, value: Any, expected: str) -> ConfigError:
    """The error for `key` in `source` holding `value` where `expected` (a phrase: "an integer") belongs;
    the caller raises it."""
    return ConfigError(f"{source}: key {key!r} has value {_describe(value)}, expected {expected}")


def config_int(value: Any, *, source: str, key: str) -> int:
    """A config value as an integer, as the docs promise ("16000" and 16000.0 are accepted); a bool or
    anything else is refused with `config_error`."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise config_error(source, key, value, "an integer")
    try:
        if isinstance(value, str):
            value = value.strip()
            return int(value) if value.lstrip("+-").isdigit() else int(float(value))
        return int(value)
    except (ValueError, OverflowError):
        raise config_error(source, key, value, "an integer") from None


def config_float(value: Any, *, source: str, key: str) -> float:
    """A config value as a finite number (an int, a float or a numeric string); a bool, NaN, an infinity
    or anything else is refused with `config_error`."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise config_error(source, key, value, "a number")
    try:
        result = float(value)
    except ValueError:
        raise config_error(source, key, value, "a number") from None
    if not math.isfinite(result):
        raise config_error(source, key, value, "a finite number")
    return result


# The largest token count any setting may hold: well above every model's window, and far below the
# sizes that overflow arithmetic or a provider's request validation.
MAX_TOKENS = 100_000_000


def _to_token_count(value: Any, *, source: str, key: str) -> int:
    """A window or output size: a positive integer no larger than `MAX_TOKENS`."""
    number = config_int(value, source=source, key=key)
    if not 1 <= number <= MAX_TOKENS:
        raise config_error(source, key, value, f"an integer between 1 and {MAX_TOKENS}")
    return number


def _to_bool(value: Any, *, source: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise config_error(source, key, value, "true or false")
    return value


SandboxMode = Literal["auto", "on", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "on", "off")


def _to_sandbox_mode(value: Any, *, source: str) -> SandboxMode:
    if value is True:
        return "on"
    if value is False:
        return "off"
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    raise config_error(source, "sandbox", value, "auto, on or off (true and false mean on and off)")


def config_str(value: Any, *, source: str, key: str) -> str:
    """A config value that must be a string, unchanged."""
    if not isinstance(value, str):
        raise config_error(source, key, value, "a string")
    return value


def config_str_list(value: Any, *, source: str, key: str) -> tuple[str, ...]:
    """A config value that must be a list of strings, as a tuple."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise config_error(source, key, value, "a list of strings")
    return tuple(value)


def _to_section(value: Any, *, source: str, key: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise config_error(source, key, value, "an object")
    return value


# -- compaction (SPEC CMP-12) ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CompactionConfig:
    output_reserve_tokens: int = 16000
    summary_reserve_tokens: int = 8000
    snip_max_chars: int = 2000
    snip_tool_output_token_budget: int = 50000
    snip_preserve_last_n_messages: int = 12
    summary_keep_tokens: int = 20000
    max_consecutive_failures: int = 3
    default_context_window: int = 128000
    hard_margin_tokens: int = 3000
    summarizer: str = "auto"
    """`model` (ask the model), `extractive` (no model call) or `auto` (model when one is configured)."""
    schedule: str = "cost"
    """When to compact below the soft line: `cost` (when carrying the history for the expected remaining
    calls costs more than the compaction) or `threshold` (the cost line of `nova.context.economy`)."""
    expected_calls: int = 20
    """`cost` schedule: the remaining calls assumed until the session has a history of its own."""
    cache_ttl_seconds: int = 300
    """`cost` schedule: how long the provider keeps a cached prefix (300, or 3600 for a 1-hour cache)."""
    configured: frozenset[str] = frozenset()
    """The keys the config file set. The budget derives the others from the window, and clamps these
    (with a warning naming the key) only when they cannot work at it."""


COMPACTION_KEYS = (
    "output_reserve_tokens",
    "summary_reserve_tokens",
    "snip_max_chars",
    "snip_tool_output_token_budget",
    "snip_preserve_last_n_messages",
    "summary_keep_tokens",
    "max_consecutive_failures",
    "default_context_window",
)
DEAD_COMPACTION_KEYS = ("token_ratio", "max_messages", "max_turns_between_compact")
SUMMARIZERS = ("auto", "model", "extractive")
SCHEDULES = ("threshold", "cost")
MIN_SUMMARY_KEEP_TOKENS = 1024
# Old names, for which key a config file set.
_CANONICAL_KEY = {"snip_preserve_last_n_turns": "snip_preserve_last_n_messages",
                  "summary_keep_ratio": "summary_keep_tokens"}


def _parse_compaction_config(
    raw: Mapping[str, Any], *, source: str = "config.json", warn: Warn | None = None
) -> CompactionConfig:
    """Parse the `compaction` section exactly as CMP-12 documents it.

    The eight documented keys are converted with int(); `snip_preserve_last_n_turns` is an alias read
    only when the real key is missing; the deprecated `summary_keep_ratio` is converted against
    `default_context_window` when `summary_keep_tokens` is absent; `summary_keep_tokens` below 1024 is
    rounded up; the three dead keys have no effect beyond a warning; other unknown keys are ignored.
    Nova's additions: `hard_margin_tokens` (CMP-2) and `summarizer`.
    """
    warn = warn or (lambda _msg: None)
    src = f"{source} [compaction]"
    defaults = CompactionConfig()

    def get_int(key: str, default: int) -> int:
        return config_int(raw[key], source=src, key=key) if key in raw else default

    window = (_to_token_count(raw["default_context_window"], source=src, key="default_context_window")
              if "default_context_window" in raw else defaults.default_context_window)

    if "snip_preserve_last_n_messages" in raw:
        preserve = get_int("snip_preserve_last_n_messages", 12)
    elif "snip_preserve_last_n_turns" in raw:
        preserve = config_int(raw["snip_preserve_last_n_turns"], source=src, key="snip_preserve_last_n_turns")
        if preserve < 0:
            raise config_error(src, "snip_preserve_last_n_turns", raw["snip_preserve_last_n_turns"],
                       "a non-negative integer")
        warn(f"{src}: 'snip_preserve_last_n_turns' is an old alias; rename it to 'snip_preserve_last_n_messages'")
    else:
        preserve = defaults.snip_preserve_last_n_messages

    if "summary_keep_tokens" in raw:
        keep = get_int("summary_keep_tokens", defaults.summary_keep_tokens)
    elif "summary_keep_ratio" in raw:
        ratio = config_float(raw["summary_keep_ratio"], source=src, key="summary_keep_ratio")
        keep = int(ratio * window)
        warn(
            f"{src}: 'summary_keep_ratio' is deprecated; it was converted to summary_keep_tokens={keep} "
            f"against default_context_window={window}. Set 'summary_keep_tokens' instead."
        )
    else:
        keep = defaults.summary_keep_tokens
    keep = max(keep, MIN_SUMMARY_KEEP_TOKENS)

    for dead in DEAD_COMPACTION_KEYS:
        if dead in raw:
            warn(f"{src}: '{dead}' has no effect (it is not read by Nova); remove it to avoid confusion")

    summarizer = config_str(raw["summarizer"], source=src, key="summarizer") if "summarizer" in raw else "auto"
    if summarizer not in SUMMARIZERS:
        raise config_error(src, "summarizer", summarizer, "one of " + ", ".join(SUMMARIZERS))

    schedule = config_str(raw["schedule"], source=src, key="schedule") if "schedule" in raw else defaults.schedule
    if schedule not in SCHEDULES:
        raise config_error(src, "schedule", schedule, "one of " + ", ".join(SCHEDULES))
    expected_calls = get_int("expected_calls", defaults.expected_calls)
    if expected_calls < 1:
        raise config_error(src, "expected_calls", raw["expected_calls"], "a positive integer")
    ttl = get_int("cache_ttl_seconds", defaults.cache_ttl_seconds)
    if ttl < 1:
        raise config_error(src, "cache_ttl_seconds", raw["cache_ttl_seconds"], "a positive number of seconds")

    config = CompactionConfig(
        schedule=schedule, expected_calls=expected_calls, cache_ttl_seconds=ttl,
        output_reserve_tokens=get_int("output_reserve_tokens", defaults.output_reserve_tokens),
        summary_reserve_tokens=get_int("summary_reserve_tokens", defaults.summary_reserve_tokens),
        snip_max_chars=get_int("snip_max_chars", defaults.snip_max_chars),
        snip_tool_output_token_budget=get_int(
            "snip_tool_output_token_budget", defaults.snip_tool_output_token_budget
        ),
        snip_preserve_last_n_messages=preserve,
        summary_keep_tokens=keep,
        max_consecutive_failures=get_int("max_consecutive_failures", defaults.max_consecutive_failures),
        default_context_window=window,
        hard_margin_tokens=get_int("hard_margin_tokens", defaults.hard_margin_tokens),
        summarizer=summarizer,
        configured=frozenset(_CANONICAL_KEY.get(key, key) for key in raw
                             if _CANONICAL_KEY.get(key, key) in (*COMPACTION_KEYS, "hard_margin_tokens")),
    )
    for key in ("output_reserve_tokens", "summary_reserve_tokens", "snip_max_chars", "hard_margin_tokens",
                "snip_tool_output_token_budget", "snip_preserve_last_n_messages"):
        if getattr(config, key) < 0:
            raise config_error(src, key, raw.get(key), "a non-negative integer")
    if config.snip_max_chars < 8:
        raise config_error(src, "snip_max_chars", raw.get("snip_max_chars"), "an integer of at least 8")
    return config


# -- spill (SPEC SPILL-1..5) -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SpillConfig:
    max_result_chars: int = 50_000
    max_message_chars: int = 200_000
    preview_chars: int = 2_000
    configured: frozenset[str] = frozenset()
    """The keys the config file set (see `CompactionConfig.configured`)."""


def _parse_spill_config(raw: Mapping[str, Any], *, source: str) -> SpillConfig:
    src = f"{source} [spill]"
    values = {
        f.name: config_int(raw[f.name], source=src, key=f.name) for f in fields(SpillConfig)
        if f.name in raw and f.name != "configured"
    }
    config = replace(SpillConfig(), **values, configured=frozenset(values))
    for key, value in values.items():
        if value <= 0:
            raise config_error(src, key, raw[key], "a positive integer")
    return config


# -- permissions -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PermissionsConfig:
    """Rules are `TOOL` or `TOOL(pattern)`, e.g. `bash(git push*)`, `write_file(src/**)`.
    Deny beats allow; allow beats ask; read-only tools are allowed unless denied."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()


def _parse_permissions_config(raw: Mapping[str, Any], *, source: str) -> PermissionsConfig:
    src = f"{source} [permissions]"
    values = {
        f.name: config_str_list(raw[f.name], source=src, key=f.name)
        for f in fields(PermissionsConfig)
        if f.name in raw
    }
    return replace(PermissionsConfig(), **values)


# -- the whole configuration -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    provider: str = "anthropic"
    model: str = DEFAULT_MODELS["anthropic"]
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int | None = None
    """The model's window; None means: from the model table, else compaction.default_context_window
    (`nova.context.budget.budget_for` decides, once)."""
    max_output_tokens: int = 8192
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    spill: SpillConfig = field(default_factory=SpillConfig)
    permissions: PermissionsConfig = field(default_factory=PermissionsConfig)
    sandbox: SandboxMode = "auto"
    """Where commands the model runs (`bash`, stdio MCP servers) run; see `nova.tools.policy.sandbox`.
    `auto` (the default): inside bubblewrap where it can run, else unconfined with every command that
    is not read-only asked; `on`: inside bubblewrap or not at all; `off`: unconfined, under the rules alone.
    The config takes `true` for `on` and `false` for `off` too."""
    sandbox_network: bool = False
    """With the sandbox on: let commands reach the network (off: they have none)."""
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Raw sections owned by other modules (e.g. `memory`, `instructions`), parsed where they are used."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Where each top-level value came from: `default`, the config path, `env:NAME` or `flag`; `home`
    is `env:NOVA_HOME`, `argument` (the caller named it) or absent (the default, ~/.nova)."""
    warnings: tuple[str, ...] = ()

    @property
    def config_file(self) -> Path:
        return config_path(self.home)

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    def section(self, name: str) -> Mapping[str, Any]:
        return self.sections.get(name, {})


TOP_LEVEL_KEYS = {
    "provider", "model", "base_url", "api_key_env", "context_window", "max_output_tokens",
    "compaction", "spill", "permissions", "sandbox", "sandbox_network",
}
# Sections parsed by the modules that own them; listed so they are not reported as unknown.
OWNED_SECTIONS = {"memory", "instructions", "server", "policy", "cache", "tui", "tools",
                  # MCP servers in the shape other agents use, and the client's own knobs (nova.mcp.config).
                  "mcpServers", "mcp", "store"}

ENV_OVERRIDES = {"NOVA_PROVIDER": "provider", "NOVA_MODEL": "model", "NOVA_BASE_URL": "base_url"}


MAX_CONFIG_BYTES = 1024 * 1024
"""The largest config file read: hundreds of times a full one."""


def read_config_file(path: Path) -> dict[str, Any]:
    """The parsed file, `{}` when absent. Errors name the file and, for JSON, the line and column. Only
    a regular file is read (a FIFO there must not hang every command, nor a link to `/dev/zero` fill
    memory), to at most `MAX_CONFIG_BYTES`, and JSON nested too deeply is refused unparsed."""
    from nova.fs.safe_read import loads, read_bytes

    fix = "Fix the file or move it aside to use the defaults."
    try:
        raw = read_bytes(path, limit=MAX_CONFIG_BYTES, what="a config file")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except FileRefused as exc:
        raise ConfigError(f"{str(exc).rstrip('.')}. {fix}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: is not UTF-8 text") from None
    if not text.strip():
        return {}
    try:
        data = loads(text, where=str(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}. {fix}") from None
    except FileRefused as exc:
        raise ConfigError(f"{str(exc).rstrip('.')}. {fix}") from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        raise ConfigError(f"{path}: not valid JSON: {exc}. {fix}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level, found {type(data).__name__}")
    return data


def load_settings(
    *,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    file_data: Mapping[str, Any] | None = None,
) -> Settings:
    """Defaults ← config file ← environment (NOVA_PROVIDER, NOVA_MODEL, NOVA_BASE_URL) ← CLI flags.
    `file_data` stands for the config file's content (`nova config set` checks an edit before writing)."""
    env = {} if env is None else env
    sources: dict[str, str] = {}
    if home is None:
        home = nova_home(env)
        if env.get("NOVA_HOME"):
            sources["home"] = "env:NOVA_HOME"
    else:
        sources["home"] = "argument"
    path = config_path(home)
    raw = read_config_file(path) if file_data is None else dict(file_data)
    source = str(path)
    warnings: list[str] = []

    layered: dict[str, Any] = {}
    for key, value in raw.items():
        if key in TOP_LEVEL_KEYS:
            layered[key] = value
            sources[key] = source
        elif key not in OWNED_SECTIONS:
            warnings.append(f"{source}: unknown key {key!r} is ignored")
    for var, key in ENV_OVERRIDES.items():
        if env.get(var):
            layered[key] = env[var]
            sources[key] = f"env:{var}"
    for key, value in (overrides or {}).items():
        if value is not None:
            layered[key] = value
            sources[key] = "flag"

    def src_of(key: str) -> str:
        return sources.get(key, "default")

    provider = config_str(layered.get("provider", "anthropic"), source=src_of("provider"), key="provider")
    if provider not in PROVIDERS:
        raise config_error(src_of("provider"), "provider", provider, "one of " + ", ".join(PROVIDERS))
    if "model" in layered:
        model = config_str(layered["model"], source=src_of("model"), key="model")
    else:
        model = DEFAULT_MODELS[provider]
    base_url = layered.get("base_url")
    if base_url is not None:
        base_url = config_str(base_url, source=src_of("base_url"), key="base_url")
        if not base_url.startswith(("http://", "https://")):  # else every call fails to connect, unexplained
            raise config_error(src_of("base_url"), "base_url", base_url, "an http:// or https:// address")
    api_key_env = layered.get("api_key_env")
    if api_key_env is not None:
        api_key_env = config_str(api_key_env, source=src_of("api_key_env"), key="api_key_env")
    window = layered.get("context_window")
    if window is not None:
        window = _to_token_count(window, source=src_of("context_window"), key="context_window")
    max_out = _to_token_count(layered.get("max_output_tokens", 8192), source=src_of("max_output_tokens"),
                              key="max_output_tokens")

    sandbox = _to_sandbox_mode(layered.get("sandbox", "auto"), source=src_of("sandbox"))
    sandbox_network = _to_bool(layered.get("sandbox_network", False), source=src_of("sandbox_network"),
                               key="sandbox_network")

    compaction_raw = _to_section(layered.get("compaction", {}), source=source, key="compaction")
    spill_raw = _to_section(layered.get("spill", {}), source=source, key="spill")
    permissions_raw = _to_section(layered.get("permissions", {}), source=source, key="permissions")
    sections = {
        key: _to_section(raw[key], source=source, key=key) for key in OWNED_SECTIONS if key in raw
    }
    return Settings(
        home=home,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        context_window=window,
        max_output_tokens=max_out,
        compaction=_parse_compaction_config(compaction_raw, source=source, warn=warnings.append),
        spill=_parse_spill_config(spill_raw, source=source),
        permissions=_parse_permissions_config(permissions_raw, source=source),
        sandbox=sandbox,
        sandbox_network=sandbox_network,
        sections=sections,
        sources=sources,
        warnings=tuple(warnings),
    )


def describe_settings(settings: Settings, *, derived: Sequence[tuple[str, Any]] = ()) -> list[tuple[str, Any, str]]:
    """(key, effective value, where it came from) for every setting, for `nova config show`. `derived`
    are figures worked out from the settings elsewhere (the context budget), shown as `derived`."""
    file_raw = read_config_file(settings.config_file)
    rows: list[tuple[str, Any, str]] = [
        ("home", str(settings.home), settings.sources.get("home", "default")),
    ]
    for key in ("provider", "model", "base_url", "api_key_env", "context_window", "max_output_tokens", "sandbox",
                "sandbox_network"):
        origin = settings.sources.get(key, "default")
        if key == "model" and origin == "default":
            origin = f"default for {settings.provider}"  # the default model follows the provider
        rows.append((key, getattr(settings, key), origin))
    rows.extend((key, value, "derived") for key, value in derived)
    for section_name in ("compaction", "spill", "permissions"):
        section = getattr(settings, section_name)
        section_raw = file_raw.get(section_name, {}) if isinstance(file_raw.get(section_name), dict) else {}
        for f in fields(section):
            if f.name == "configured":  # bookkeeping of which keys the file set, not a setting
                continue
            value = getattr(section, f.name)
            origin = str(settings.config_file) if f.name in section_raw else "default"
            if section_name == "compaction" and f.name == "snip_preserve_last_n_messages" and (
                "snip_preserve_last_n_turns" in section_raw and f.name not in section_raw
            ):
                origin = f"{settings.config_file} (alias snip_preserve_last_n_turns)"
            if section_name == "compaction" and f.name == "summary_keep_tokens" and (
                "summary_keep_ratio" in section_raw and f.name not in section_raw
            ):
                origin = f"{settings.config_file} (from deprecated summary_keep_ratio)"
            rows.append((f"{section_name}.{f.name}", list(value) if isinstance(value, tuple) else value, origin))
    return rows
