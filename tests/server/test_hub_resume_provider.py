"""A session the hub (the TUI's and the server's) resumes continues on the provider and model it was
recorded with, as `nova resume` does, rather than on the hub's defaults."""

from __future__ import annotations

from pathlib import Path

from nova.agent.builder import AgentOptions
from nova.host.hub import SessionHub
from nova.providers.base import Provider
from nova.providers.scripted import FunctionProvider, reply
from nova.sessions.session import Session
from nova.settings import Settings, load_settings


def _never() -> Provider:
    raise AssertionError("the hub's default provider was made for a session recorded on another")


def test_a_resumed_session_runs_on_its_recorded_provider_and_model(nova_home: Path, tmp_path: Path) -> None:
    recorded = Session.create(nova_home, title="earlier", cwd=str(tmp_path), provider="demo", model="nova-demo")
    recorded.close()
    # The hub's defaults come from the environment (not a flag, which would override the record).
    settings = load_settings(env={"NOVA_HOME": str(nova_home), "NOVA_PROVIDER": "openai", "NOVA_MODEL": "gpt-4.1"})
    asked: list[Settings] = []

    def provider_for(own: Settings) -> Provider:
        asked.append(own)
        return FunctionProvider(lambda request: reply("hello again"))

    hub = SessionHub(settings, options=AgentOptions(cwd=tmp_path, yes=True), make_provider=_never,
                     provider_for=provider_for)
    try:
        with hub.leased(recorded.id) as live:
            assert live.agent.model == "nova-demo"
    finally:
        hub.close()
    assert [(s.provider, s.model) for s in asked] == [("demo", "nova-demo")]


def test_a_session_on_the_hubs_own_provider_uses_the_hubs_factory(nova_home: Path, tmp_path: Path) -> None:
    recorded = Session.create(nova_home, title="earlier", cwd=str(tmp_path), provider="demo", model="nova-demo")
    recorded.close()
    settings = load_settings(env={"NOVA_HOME": str(nova_home)}, overrides={"provider": "demo", "model": "nova-demo"})
    made: list[str] = []

    def own() -> Provider:
        made.append("hub")
        return FunctionProvider(lambda request: reply("hi"))

    def other(_: Settings) -> Provider:
        raise AssertionError("no other provider is needed")

    hub = SessionHub(settings, options=AgentOptions(cwd=tmp_path, yes=True), make_provider=own, provider_for=other)
    try:
        with hub.leased(recorded.id):
            pass
    finally:
        hub.close()
    assert made == ["hub"]
