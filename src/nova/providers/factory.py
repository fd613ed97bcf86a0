"""Settings and environment in, a provider out: the one place that reads API keys.

    provider = make_provider(load_settings(), os.environ)

The environment is an argument (STYLE habit 4: environment variables are read only at the edges, and
the CLI or server passes them in). Every SDK import is lazy, so `--provider demo` works with neither
SDK installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nova.errors import ConfigError, MissingCredentials
from nova.providers.base import Provider
from nova.settings import Settings

__all__ = ["LOCAL_SERVER_HINT", "check_provider_settings", "default_key_variable", "make_provider"]

LOCAL_SERVER_HINT = "--base-url http://localhost:11434/v1 --provider compatible"
_KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "compatible": "OPENAI_API_KEY",
}


def default_key_variable(provider: str) -> str:
    return _KEY_VARIABLES.get(provider, "OPENAI_API_KEY")


def _api_key(settings: Settings, env: Mapping[str, str]) -> str:
    variable = settings.api_key_env or default_key_variable(settings.provider)
    key = env.get(variable, "").strip()
    if not key:
        raise MissingCredentials(
            f"No API key for provider {settings.provider!r}: set {variable} "
            f"(export {variable}=...), or to use a local OpenAI-compatible server (Ollama, vLLM, "
            f"llama.cpp) pass `{LOCAL_SERVER_HINT}`.",
            provider=settings.provider,
        )
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
        from nova.demo import make_demo_provider

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
