"""Settings and environment in, a provider out: the one place that reads API keys.

    provider = make_provider(load_settings(), os.environ)

The environment is an argument (STYLE habit 4: environment variables are read only at the edges, and
the CLI or server passes them in). Every SDK import is lazy, so `--provider demo` works with neither
SDK installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nova.errors import ConfigError, MissingCredentials
from nova.providers.base import Provider
from nova.settings import PROVIDERS, Settings

__all__ = ["LOCAL_SERVER_HINT", "ProviderKeyStatus", "check_provider_settings", "default_key_variable",
           "key_status", "make_provider", "missing_key_advice"]

LOCAL_SERVER_HINT = "--base-url http://localhost:11434/v1 --provider compatible"
_KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "compatible": "OPENAI_API_KEY",
}
# Providers that work without a key: the demo model is offline, a local server rarely asks for one.
_KEYLESS = ("compatible", "demo")


def default_key_variable(provider: str) -> str:
    return _KEY_VARIABLES.get(provider, "OPENAI_API_KEY")


def _key_variable(settings: Settings, provider: str) -> str:
    """`api_key_env` names the key of the configured provider only; the others keep their usual one."""
    if provider == settings.provider and settings.api_key_env:
        return settings.api_key_env
    return default_key_variable(provider)


@dataclass(frozen=True, slots=True)
class ProviderKeyStatus:
    """Whether one provider can be used as things stand, for `nova config show`. Never holds the key."""

    provider: str
    key_variable: str | None
    """The environment variable its key is read from; None when it needs none."""
    key_set: bool
    current: bool
    """The provider the settings select."""
    how_to_set: str
    """The exact commands that make it usable (a key to export, a URL to set) and select it."""


def key_status(settings: Settings, env: Mapping[str, str]) -> list[ProviderKeyStatus]:
    """One row per provider: its key variable and whether that variable holds something (its value is
    only tested, never returned), and the commands that make it the one Nova uses."""
    rows = []
    for provider in PROVIDERS:
        if provider in _KEYLESS:
            # A local server needs a key only when `api_key_env` names one for it.
            variable = settings.api_key_env if provider == settings.provider else None
        else:
            variable = _key_variable(settings, provider)
        key_set = bool(variable and env.get(variable, "").strip())
        current = provider == settings.provider
        steps = [f"export {variable}=..."] if variable and not key_set else []
        if provider == "compatible" and not (current and settings.base_url):
            steps.append(f"nova --provider compatible --base-url http://localhost:11434/v1 (your server's URL; for "
                         f"good: nova config set base_url URL, then nova config set provider {provider})")
        elif not current:
            steps.append(f"nova --provider {provider} (for good: nova config set provider {provider})")
        rows.append(ProviderKeyStatus(provider=provider, key_variable=variable, key_set=key_set, current=current,
                                      how_to_set="; then ".join(steps) or "ready"))
    return rows


def missing_key_advice(provider: str, variable: str) -> str:
    """What to do when `provider` has no key: set it, try the offline demo, or pick another provider."""
    others = ", ".join(p for p in PROVIDERS if p not in (provider, *_KEYLESS))
    return (
        f"No API key for provider {provider!r}: set {variable} (export {variable}=...).\n"
        f"  Try Nova offline first, no key needed: nova --provider demo\n"
        f"  Choose another provider ({others}) with: nova config set provider NAME\n"
        f"  A local OpenAI-compatible server (Ollama, vLLM, llama.cpp) needs no key: pass "
        f"`{LOCAL_SERVER_HINT}`\n"
        f"  `nova config show` lists every provider and whether its key is set."
    )


def _api_key(settings: Settings, env: Mapping[str, str]) -> str:
    variable = _key_variable(settings, settings.provider)
    key = env.get(variable, "").strip()
    if not key:
        raise MissingCredentials(missing_key_advice(settings.provider, variable), provider=settings.provider)
    return key


def check_provider_settings(settings: Settings) -> None:
    """What the settings alone must hold for `settings.provider` (API keys are checked when the provider
    is made: they come from the environment, not the config)."""
    if settings.provider == "compatible" and not settings.base_url:
        raise ConfigError(
            "provider 'compatible' needs a base_url: pass --base-url http://localhost:11434/v1 "
            "(Ollama; vLLM and llama.cpp serve at http://localhost:8000/v1 and http://localhost:8080/v1)"
        )


def make_provider(settings: Settings, env: Mapping[str, str], *, http_client: Any = None) -> Provider:
    """The provider `settings.provider` names. `http_client` (an `httpx2.Client`) is handed to the SDK,
    which is how tests and proxies reach the adapters; without it the adapters talk to the network."""
    kind = settings.provider
    check_provider_settings(settings)
    # The agent loop retries rate limits and overload itself (with the provider's retry-after), so the
    # SDKs must not retry too: nested retries would multiply the wait and hide the classification.
    common: dict[str, Any] = {"http_client": http_client, "max_retries": 0}
    if kind == "demo":
        from nova.agent.demo import make_demo_provider

        demo: Provider = make_demo_provider()
        return demo
    if kind == "anthropic":
        from nova.providers.anthropic import AnthropicProvider

        return AnthropicProvider(api_key=_api_key(settings, env), base_url=settings.base_url, **common)
    if kind == "openai":
        from nova.providers.openai import OpenAIChatProvider

        return OpenAIChatProvider(api_key=_api_key(settings, env), base_url=settings.base_url, **common)
    if kind == "openai-responses":
        from nova.providers.openai import OpenAIResponsesProvider

        return OpenAIResponsesProvider(api_key=_api_key(settings, env), base_url=settings.base_url, **common)
    if kind == "compatible":
        from nova.providers.openai import OpenAIChatProvider

        # Local servers need no key (one is used only when api_key_env names it), but the SDK insists
        # on a non-empty one.
        key = env.get(settings.api_key_env, "").strip() if settings.api_key_env else ""
        return OpenAIChatProvider(
            api_key=key or "not-needed", base_url=settings.base_url, compatible=True, **common
        )
    raise ConfigError(
        f"unknown provider {kind!r}: expected anthropic, openai, openai-responses, compatible or demo"
    )
