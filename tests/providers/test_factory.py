"""make_provider: credentials from the given environment, clear messages when they are missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova.agent.provider_factory import make_provider
from nova.errors import ConfigError, MissingCredentials
from nova.providers.anthropic import AnthropicProvider
from nova.providers.base import Provider
from nova.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from nova.settings import Settings


def _settings(**kw: object) -> Settings:
    return Settings(home=Path("/nonexistent/nova-home"), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
    ],
)
def test_missing_key_says_which_variable_and_how_to_go_local(provider: str, variable: str) -> None:
    with pytest.raises(MissingCredentials) as info:
        make_provider(_settings(provider=provider), {})
    message = str(info.value)
    assert f"set {variable}" in message
    assert "--base-url http://localhost:11434/v1 --provider compatible" in message


def test_api_key_env_setting_names_the_variable() -> None:
    with pytest.raises(MissingCredentials, match="set MY_GATEWAY_KEY"):
        make_provider(_settings(provider="openai", api_key_env="MY_GATEWAY_KEY"), {"OPENAI_API_KEY": "sk-x"})
    provider = make_provider(
        _settings(provider="openai", api_key_env="MY_GATEWAY_KEY"), {"MY_GATEWAY_KEY": "k"}
    )
    assert isinstance(provider, OpenAIChatProvider)


def test_builds_each_provider() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test"}
    assert isinstance(make_provider(_settings(provider="anthropic"), env), AnthropicProvider)
    chat = make_provider(_settings(provider="openai"), env)
    assert isinstance(chat, OpenAIChatProvider) and chat.name == "openai"
    responses = make_provider(_settings(provider="openai-responses"), env)
    assert isinstance(responses, OpenAIResponsesProvider) and responses.name == "openai-responses"
    for provider in (chat, responses):
        assert isinstance(provider, Provider)


def test_whitespace_key_counts_as_missing() -> None:
    with pytest.raises(MissingCredentials):
        make_provider(_settings(provider="anthropic"), {"ANTHROPIC_API_KEY": "  "})


def test_compatible_needs_base_url_but_no_key() -> None:
    provider = make_provider(_settings(provider="compatible", base_url="http://localhost:11434/v1"), {})
    assert isinstance(provider, OpenAIChatProvider)
    assert provider.name == "compatible" and provider.compatible
    with pytest.raises(ConfigError, match="--base-url"):
        make_provider(_settings(provider="compatible"), {})


def test_demo_provider_is_imported_lazily() -> None:
    provider = make_provider(_settings(provider="demo", model="nova-demo"), {})
    assert provider.name == "demo"
