"""What the page shows beside the context bar (model, cost, cache hit rate) and in the sidebar (titles):
the numbers `nova run` prints and the titles it gives, read back through the API of a real server."""

from __future__ import annotations

from pathlib import Path

from nova.agent.builder import AgentOptions
from nova.cli.commands.run import run_task
from nova.model import Usage
from nova.providers.scripted import ScriptedProvider, reply
from nova.sessions.session import Session
from nova.settings import load_settings

from .helpers import Server, new_session, running_server, send


def test_the_context_endpoint_gives_the_cost_and_hit_rate_nova_run_printed(nova_home: Path, project: Path) -> None:
    settings = load_settings(env={"NOVA_HOME": str(nova_home)},
                             overrides={"provider": "anthropic", "model": "claude-sonnet-4-5"})
    usage = Usage(input_tokens=1200, cache_read_tokens=3600, cache_write_tokens=400, output_tokens=90)
    model = ScriptedProvider([reply("Done.", usage=usage)], model="claude-sonnet-4-5")
    printed = run_task(settings, model, AgentOptions(cwd=project, yes=True), "what is here?", quiet=True)
    assert printed["cost_usd"] and printed["cache_hit_rate"] == 3600 / 5200
    with running_server(nova_home, project) as server, server.client() as client:
        shown = client.get(f"/api/sessions/{printed['session_id']}/context").json()
    assert (shown["provider"], shown["model"]) == ("anthropic", "claude-sonnet-4-5")
    assert shown["cost_usd"] == printed["cost_usd"]
    assert shown["cache_hit_rate"] == printed["cache_hit_rate"]
    # The calls behind the cost, by purpose, as the run printed them.
    assert shown["calls"] == printed["calls"] and shown["calls"]["turn"]["calls"] == 1


def test_a_demo_session_costs_nothing_and_an_unpriced_model_is_unknown(server: Server, nova_home: Path) -> None:
    with server.client() as client:
        sid = new_session(client)
        before = client.get(f"/api/sessions/{sid}/context").json()
        assert before["cache_hit_rate"] is None  # no model call yet
        response, _, done = send(client, sid, "which files are here?")
        assert response.status_code == 200 and done
        after = client.get(f"/api/sessions/{sid}/context").json()
    assert (after["provider"], after["model"], after["cost_usd"]) == ("demo", "nova-demo", 0.0)
    assert after["cache_hit_rate"] is not None
    with Session.create(nova_home, title="elsewhere", provider="custom", model="mystery-model") as session:
        session.add_cost(Usage(input_tokens=10, output_tokens=2), 0.0)
        session.flush()
    with server.client() as client:
        unknown = client.get(f"/api/sessions/{session.id}/context").json()
    assert unknown["model"] == "mystery-model" and unknown["cost_usd"] is None
    assert unknown["cache_hit_rate"] == 0.0


def test_a_session_made_without_a_title_is_named_after_its_first_message(server: Server) -> None:
    with server.client() as client:
        untitled = new_session(client, "")
        titled = new_session(client, "kept as given")
        for sid in (untitled, titled):
            response, _, done = send(client, sid, "  which   files\nare here?  " + "x" * 100)
            assert response.status_code == 200 and done
        titles = {s["id"]: s["title"] for s in client.get("/api/sessions").json()}
    # As `nova run` titles a new session: whitespace collapsed, the first 80 characters.
    assert titles[untitled] == ("which files are here? " + "x" * 100)[:80]
    assert titles[titled] == "kept as given"


def test_a_side_call_with_no_price_leaves_the_pages_cost_unknown(server: Server, nova_home: Path) -> None:
    with Session.create(nova_home, title="side", provider="anthropic", model="claude-sonnet-4-5") as session:
        session.add_cost(Usage(input_tokens=1_000, output_tokens=20), 0.0033)
        session.add_cost(Usage(input_tokens=400, output_tokens=30), None, "memory_extraction")
        session.flush()
    with server.client() as client:
        shown = client.get(f"/api/sessions/{session.id}/context").json()
        listed = {s["id"]: s for s in client.get("/api/sessions").json()}
    assert shown["cost_usd"] is None and listed[session.id]["cost_usd"] is None
    assert shown["calls"]["turn"]["cost_usd"] == 0.0033 and shown["calls"]["turn"]["tokens"] == 1_020
    assert shown["calls"]["memory_extraction"] == {"calls": 1, "tokens": 430, "cost_usd": None, "unpriced_calls": 1,
                                                   "usage": Usage(input_tokens=400, output_tokens=30).to_dict()}
