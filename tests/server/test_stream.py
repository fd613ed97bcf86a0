"""`POST …/messages`: the AI SDK UI message stream of a real turn, and a turn outliving its client."""

from __future__ import annotations

import time
from collections import Counter

import httpx2 as httpx

from nova.agent.demo import DEMO_PROMPT

from .helpers import Server, new_session, parse_sse, send, texts_by_part

PROTOCOL_TYPES = {
    "start", "start-step", "finish-step", "text-start", "text-delta", "text-end", "tool-input-available",
    "tool-output-available", "tool-output-error", "data-nova-context", "data-nova-compaction-start",
    "data-nova-compaction-end", "data-nova-waiting", "data-nova-retry", "finish", "error",
}


def wait_idle(client: httpx.Client, sid: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        detail = client.get(f"/api/sessions/{sid}").json()
        if not detail["session"]["running"]:
            return detail
        time.sleep(0.05)
    raise AssertionError("the turn did not finish")


def test_a_turn_with_a_compaction_streams_every_part(server: Server) -> None:
    with server.client() as client:
        sid = new_session(client)
        response, chunks, done = send(client, sid, DEMO_PROMPT)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert done
        types = Counter(c["type"] for c in chunks)
        assert set(types) <= PROTOCOL_TYPES, set(types) - PROTOCOL_TYPES
        for required in ("start", "text-start", "text-delta", "text-end", "tool-input-available",
                         "tool-output-available", "data-nova-context", "data-nova-compaction-start",
                         "data-nova-compaction-end", "finish"):
            assert types[required] >= 1, required
        assert chunks[0]["type"] == "start" and chunks[-1] == {"type": "finish", "finishReason": "stop"}
        assert types["text-start"] == types["text-end"]
        # Every tool output answers an input announced before it.
        announced: set[str] = set()
        for chunk in chunks:
            if chunk["type"] == "tool-input-available":
                assert chunk["toolName"] and isinstance(chunk["input"], dict)
                announced.add(chunk["toolCallId"])
            elif chunk["type"] == "tool-output-available":
                assert chunk["toolCallId"] in announced
        start = next(c for c in chunks if c["type"] == "data-nova-compaction-start")
        # From the budget's lines (the cost schedule may fold before the soft line), never an overflow.
        assert start["data"]["reason"] in ("cost", "threshold", "hard")
        assert any(c["type"] == "data-nova-compaction-end" and c["data"]["ok"] for c in chunks)
        # Each compaction's receipt, in the words of the CLI line, beside its figures.
        from nova.context.receipt import CompactionReceipt, receipt_line
        for end in (c["data"] for c in chunks if c["type"] == "data-nova-compaction-end" and c["data"]["ok"]):
            assert end["receipt"]["tokens_before"] == end["tokensBefore"]
            assert end["receiptText"] == receipt_line(CompactionReceipt.from_json(end["receipt"]))
        # The compaction runs before the view passes the threshold: no figure on the stream is over 100 %.
        assert max(c["data"]["percent"] for c in chunks if c["type"] == "data-nova-context") <= 100
        # The last figure on the stream is the figure the context endpoint reports.
        last = [c["data"] for c in chunks if c["type"] == "data-nova-context"][-1]
        context = client.get(f"/api/sessions/{sid}/context").json()
        assert {k: context[k] for k in ("used", "limit", "window", "percent")} == last
        # The text the client rebuilds is the text that was recorded.
        recorded = [m["text"] for m in client.get(f"/api/sessions/{sid}").json()["messages"]
                    if m["role"] == "assistant" and m["text"]]
        assert texts_by_part(chunks) == recorded
        assert "All tests pass now." in recorded[-1]
        assert client.get(f"/api/sessions/{sid}").json()["compactions"] >= 1


def test_a_client_that_disconnects_does_not_lose_the_turn(server: Server) -> None:
    with server.client() as client:
        sid = new_session(client)
        with client.stream("POST", f"/api/sessions/{sid}/messages", json={"text": DEMO_PROMPT}) as response:
            first = next(response.iter_bytes())
            assert first.startswith(b"data: ")
        # The connection is closed; the turn goes on and is recorded.
        detail = wait_idle(client, sid)
        texts = [m["text"] for m in detail["messages"] if m["role"] == "assistant"]
        assert "All tests pass now." in texts[-1]
        assert (server.project / "calc" / "stats.py").read_text().count("sum(values) / len(values)") == 1
        # And the session takes the next turn.
        response, _chunks, done = send(client, sid, "what files are here?")
        assert response.status_code == 200 and done


def test_one_turn_at_a_time_per_session(server: Server) -> None:
    with server.client() as client:
        sid = new_session(client)
        with client.stream("POST", f"/api/sessions/{sid}/messages", json={"text": DEMO_PROMPT}) as response:
            received = response.iter_bytes()
            first = next(received)
            second = client.post(f"/api/sessions/{sid}/messages", json={"text": "again"})
            assert second.status_code == 409
            assert client.delete(f"/api/sessions/{sid}").status_code == 409
            assert client.post(f"/api/sessions/{sid}/compact", json={}).status_code == 409
            assert client.post(f"/api/sessions/{sid}/cancel").json() == {"cancelled": True}
            chunks, done = parse_sse(first + b"".join(received))
        assert done and chunks[-1] == {"type": "finish", "finishReason": "other"}  # cancelled
        wait_idle(client, sid)


def test_messages_accept_the_ai_sdk_transport_body(server: Server) -> None:
    body = {"id": "chat-1", "trigger": "submit-message", "messageId": None,
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "list the files"}]}]}
    with server.client() as client:
        sid = new_session(client)
        response = client.post(f"/api/sessions/{sid}/messages", json=body)
        assert response.status_code == 200
        chunks, done = parse_sse(response.content)
        assert done and chunks[-1]["type"] == "finish"
        detail = client.get(f"/api/sessions/{sid}").json()
        assert detail["messages"][0]["text"] == "list the files"
        for empty in ({"text": "  "}, {"messages": []}, {}):
            assert client.post(f"/api/sessions/{sid}/messages", json=empty).status_code == 422


def test_compact_on_request_and_context_report(server: Server) -> None:
    with server.client() as client:
        sid = new_session(client)
        send(client, sid, "what files are here?")
        send(client, sid, "and again, what files are here?")
        before = client.get(f"/api/sessions/{sid}/context").json()
        assert before["manifest_status"] == "compiled"
        assert sum(s["tokens"] for s in before["manifest"]["segments"]) == before["manifest"]["used"]
        # The API's segments are the manifest's, with the field names of `nova context --json`.
        assert before["segments"] == before["manifest"]["segments"] and before["used"] == before["manifest"]["used"]
        assert {"id", "class", "kind", "source", "tokens", "reason"} == set(before["segments"][0])
        assert 0 < before["percent"] == round(before["used"] * 100 / before["limit"], 1)
        response = client.post(f"/api/sessions/{sid}/compact", json={"focus": "the file list"})
        assert response.status_code == 200, response.text
        after = response.json()
        assert after["context"]["used"] == client.get(f"/api/sessions/{sid}/context").json()["used"]


def test_a_resumed_session_streams_after_a_restart(server: Server) -> None:
    with server.client() as client:
        sid = new_session(client)
        send(client, sid, "what files are here?")
    server.hub.close()  # as if the server restarted: the next request resumes from the record
    with server.client() as client:
        before = client.get(f"/api/sessions/{sid}/context").json()
        assert before["used"] > 0 and any(s["id"].startswith("history.") or s["id"] == "request"
                                          for s in before["segments"])
        response, _chunks, done = send(client, sid, "once more")
        assert response.status_code == 200 and done
