"""Approvals over HTTP, on a real server on loopback: the stream asks, POST …/approvals/{call_id} answers,
a timeout or a cancel denies, and a denied call is marked denied in the stream and in the record."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nova.agent.demo import DEMO_PROMPT
from nova.server.config import ServerConfig
from nova.sessions.schema import EventRecord
from nova.sessions.session import Session

from .helpers import Server, new_session, running_server

Decide = Callable[[dict[str, Any]], str | None]


@pytest.fixture
def asking(nova_home: Path, project: Path) -> Iterator[Server]:
    with running_server(nova_home, project, yes=False) as handle:
        yield handle


def stream_turn(server: Server, sid: str, text: str, decide: Decide) -> list[dict[str, Any]]:
    """Send `text` and read the stream as it comes; each approval request is answered with what
    `decide` returns for it (None: leave it unanswered)."""
    chunks: list[dict[str, Any]] = []
    with server.client() as client, server.client() as answers, \
            client.stream("POST", f"/api/sessions/{sid}/messages", json={"text": text}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            chunks.append(chunk)
            if chunk["type"] == "tool-approval-request":
                decision = decide(chunk)
                if decision is not None:
                    reply = answers.post(f"/api/sessions/{sid}/approvals/{chunk['toolCallId']}",
                                         json={"decision": decision})
                    assert reply.status_code == 200, reply.text
                    assert reply.json() == {"call_id": chunk["toolCallId"], "decision": decision}
    return chunks


def recorded_events(server: Server, sid: str, name: str) -> list[dict[str, Any]]:
    with Session.open(server.settings.home, sid, readonly=True) as record:
        return [dict(r.data) for r in record.transcript.iter_records() if isinstance(r, EventRecord) and r.name == name]


def test_allow_for_session_then_once_runs_the_calls(asking: Server) -> None:
    with asking.client() as client:
        sid = new_session(client)
    answers = iter(["session", "once"])  # the first bash call, then the edit; the second bash is covered
    requests: list[dict[str, Any]] = []

    def decide(chunk: dict[str, Any]) -> str:
        requests.append(chunk)
        return next(answers)

    chunks = stream_turn(asking, sid, DEMO_PROMPT, decide)
    assert [r["approvalDescriptor"]["summary"] for r in requests] == [
        "bash: python -m unittest -v 2>&1", "edit_file: calc/stats.py"]
    first = requests[0]
    assert first["approvalId"] and first["toolCallId"].startswith("toolu")
    assert first["approvalDescriptor"]["reason"] == "bash can change files or run commands"
    assert first["approvalDescriptor"]["grant"] == "every bash call"
    assert first["approvalDescriptor"]["timeoutS"] == 300
    # The request comes after the call's input, for the same call id.
    order = [(c["type"], c.get("toolCallId")) for c in chunks]
    assert order.index(("tool-input-available", first["toolCallId"])) < order.index(
        ("tool-approval-request", first["toolCallId"]))
    assert not any(c["type"] == "tool-output-denied" for c in chunks)
    assert "sum(values) / len(values)" in (asking.project / "calc" / "stats.py").read_text()
    approvals = recorded_events(asking, sid, "approval")
    assert [(a["tool"], a["answer"], a["by"]) for a in approvals] == [("bash", "session", "user"),
                                                                     ("edit_file", "once", "user")]
    with asking.client() as client:
        # Answered already: 409; unknown call or session: 404.
        again = client.post(f"/api/sessions/{sid}/approvals/{first['toolCallId']}", json={"decision": "deny"})
        assert again.status_code == 409 and "already answered: session (user)" in again.json()["detail"]
        assert client.post(f"/api/sessions/{sid}/approvals/toolu_nope", json={"decision": "once"}).status_code == 404
        assert client.post("/api/sessions/ses_nope/approvals/toolu_x", json={"decision": "once"}).status_code == 404
        assert client.post(f"/api/sessions/{sid}/approvals/toolu_x", json={"decision": "always"}).status_code == 422


def test_a_denied_call_is_denied_in_the_stream_and_the_record(asking: Server) -> None:
    with asking.client() as client:
        sid = new_session(client)
    chunks = stream_turn(asking, sid, DEMO_PROMPT, lambda c: "deny" if "edit_file" in c["approvalDescriptor"]["tool"]
                         else "once")
    edit_id = next(c["toolCallId"] for c in chunks if c["type"] == "tool-input-available"
                   and c["toolName"] == "edit_file")
    assert {"type": "tool-output-denied", "toolCallId": edit_id} in chunks
    reason = next(c["data"] for c in chunks if c["type"] == "data-nova-denied")
    assert reason["toolCallId"] == edit_id and "declined" in reason["reason"]
    assert not any(c.get("toolCallId") == edit_id and c["type"] in ("tool-output-error", "tool-output-available")
                   for c in chunks)
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert "was refused" in text and "I changed the denominator" not in text
    with asking.client() as client:
        detail = client.get(f"/api/sessions/{sid}").json()
    results = [p for m in detail["messages"] for p in m["parts"] if p["kind"] == "tool_result"]
    denied = [p for p in results if p.get("denied")]
    assert [p["tool_use_id"] for p in denied] == [edit_id]
    assert recorded_events(asking, sid, "permission_denied")[0]["tool_use_id"] == edit_id


def test_an_unanswered_call_is_denied_when_its_time_runs_out(nova_home: Path, project: Path) -> None:
    with running_server(nova_home, project, yes=False, config=ServerConfig(approval_timeout_s=0.3)) as server:
        with server.client() as client:
            sid = new_session(client)
        chunks = stream_turn(server, sid, DEMO_PROMPT, lambda c: None)
        asked = [c["toolCallId"] for c in chunks if c["type"] == "tool-approval-request"]
        denied = [c["toolCallId"] for c in chunks if c["type"] == "tool-output-denied"]
        assert len(asked) == 3 and denied == asked
        assert chunks[-1] == {"type": "finish", "finishReason": "stop"}
        # Each timeout is said in the stream, before its denial.
        order = [(c["type"], c.get("toolCallId") or c.get("data", {}).get("toolCallId")) for c in chunks]
        for call in asked:
            timeout = order.index(("data-nova-approval-timeout", call))
            assert timeout < order.index(("tool-output-denied", call))
            assert chunks[timeout]["data"] == {"toolCallId": call, "timeoutS": 0.3}
        approvals = recorded_events(server, sid, "approval")
        assert {a["by"] for a in approvals} == {"timeout"}
        assert {a["reason"] for a in approvals} == {"timed out after 0.3 s"}
        # The denial the model got (and the record keeps) says it timed out, not that the user declined.
        refusals = recorded_events(server, sid, "permission_denied")
        assert all("timed out after 0.3 s" in r["reason"] and "declined" not in r["reason"] for r in refusals)
        with server.client() as client:
            detail = client.get(f"/api/sessions/{sid}").json()
        assert detail["pending_approvals"] == []
        results = [p for m in detail["messages"] for p in m["parts"] if p["kind"] == "tool_result"]
        assert [p["tool_use_id"] for p in results if p.get("denied")] == asked
        assert all("timed out after 0.3 s" in str(p["content"]) for p in results if p.get("denied"))
        with server.client() as client:
            late = client.post(f"/api/sessions/{sid}/approvals/{asked[0]}", json={"decision": "once"})
        assert late.status_code == 409 and "deny (timeout)" in late.json()["detail"]


def test_cancel_denies_a_waiting_call_at_once(asking: Server) -> None:
    with asking.client() as client:
        sid = new_session(client)

    def cancel(chunk: dict[str, Any]) -> None:
        with asking.client() as client:
            assert client.post(f"/api/sessions/{sid}/cancel").json() == {"cancelled": True}

    # A cancel that did not reach the waiting call would leave it to the 300 s approval timeout: the
    # client's 60 s read timeout fails the test first, and the record would not say "cancelled".
    chunks = stream_turn(asking, sid, DEMO_PROMPT, cancel)
    asked = [c["toolCallId"] for c in chunks if c["type"] == "tool-approval-request"]
    assert len(asked) == 1
    assert {"type": "tool-output-denied", "toolCallId": asked[0]} in chunks
    assert recorded_events(asking, sid, "approval")[0]["by"] == "cancelled"


def wait_for(server: Server, sid: str, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """GET the session until `ready` says its state is what the test waits for (a turn runs on)."""
    deadline = time.monotonic() + 60
    with server.client() as client:
        while True:
            detail: dict[str, Any] = client.get(f"/api/sessions/{sid}").json()
            if ready(detail):
                return detail
            assert time.monotonic() < deadline, f"the session never got there: {detail}"
            time.sleep(0.05)


def test_a_waiting_call_outlives_the_client_that_was_asked(asking: Server) -> None:
    """The client that was streaming goes away (a page reloaded): the session's state still holds the
    waiting call, with its arguments, diff and deadline, and another client answers it."""
    with asking.client() as client:
        sid = new_session(client)
    sent = time.time()
    with asking.client() as client, \
            client.stream("POST", f"/api/sessions/{sid}/messages", json={"text": DEMO_PROMPT}) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and '"tool-approval-request"' in line:
                asked = json.loads(line[len("data: "):])
                break
    # The stream is closed; the turn waits on.
    detail = wait_for(asking, sid, lambda d: bool(d["pending_approvals"]))
    seen = time.time()
    assert detail["session"]["running"] is True
    [bash] = detail["pending_approvals"]
    assert bash["call_id"] == asked["toolCallId"] and bash["approval_id"] == asked["approvalId"]
    assert (bash["tool"], bash["input"], bash["summary"]) == (
        "bash", {"command": "python -m unittest -v 2>&1"}, "bash: python -m unittest -v 2>&1")
    assert bash["grant"] == "every bash call" and bash["diff"] == ""
    # The deadline is the timeout after the moment it was asked, which lies between sending and seeing it.
    assert bash["timeout_s"] == 300 and sent + 300 <= bash["deadline"] <= seen + 300
    assert asked["approvalDescriptor"]["deadline"] == bash["deadline"]
    with asking.client() as client:
        assert client.post(f"/api/sessions/{sid}/approvals/{bash['call_id']}", json={"decision": "once"}).status_code == 200
    # The turn goes on to the edit, which waits with the diff it would make.
    detail = wait_for(asking, sid, lambda d: [p["tool"] for p in d["pending_approvals"]] == ["edit_file"])
    [edit] = detail["pending_approvals"]
    assert edit["diff"].startswith("--- a/calc/stats.py\n+++ b/calc/stats.py\n@@ ")
    assert "\n-    return sum(values) / (len(values) - 1)\n+    return sum(values) / len(values)\n" in edit["diff"]
    with asking.client() as client:
        assert client.post(f"/api/sessions/{sid}/approvals/{edit['call_id']}", json={"decision": "once"}).status_code == 200
    detail = wait_for(asking, sid, lambda d: bool(d["pending_approvals"]) or not d["session"]["running"])
    for waiting in detail["pending_approvals"]:  # the test run after the edit
        with asking.client() as client:
            client.post(f"/api/sessions/{sid}/approvals/{waiting['call_id']}", json={"decision": "once"})
    wait_for(asking, sid, lambda d: not d["session"]["running"])
    assert "sum(values) / len(values)" in (asking.project / "calc" / "stats.py").read_text()
    assert [a["by"] for a in recorded_events(asking, sid, "approval")][:2] == ["user", "user"]
