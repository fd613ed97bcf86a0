"""The stream says when the model keeps the turn waiting: a transient `data-nova-waiting` part while a
request has no answer yet, and one `data-nova-retry` part per retry, with its delay and reason."""

from __future__ import annotations

from pathlib import Path

from nova.errors import Overloaded, RateLimited
from nova.testing import FunctionProvider

from .helpers import new_session, running_server, send


def test_a_retried_turn_streams_waiting_and_retry_parts(nova_home: Path, project: Path) -> None:
    failures = [RateLimited("slow down", status=429, retry_after=0.05),
                Overloaded("overloaded", status=529)]
    failures[1].retry_after = 0.05  # type: ignore[attr-defined]  # keep the test fast

    def answer(request: object) -> str:
        if failures:
            raise failures.pop(0)
        return "here at last"

    with running_server(nova_home, project, provider=lambda settings: FunctionProvider(answer)) as server, \
            server.client() as client:
        sid = new_session(client)
        response, chunks, done = send(client, sid, "hello?")
    assert response.status_code == 200 and done
    retries = [c["data"] for c in chunks if c["type"] == "data-nova-retry"]
    assert [r["text"] for r in retries] == [
        "retrying in 0.1 s (attempt 2 of 4): 429 slow down",
        "retrying in 0.1 s (attempt 3 of 4): 529 overloaded",
    ]
    assert retries[0] == {"attempt": 2, "maxAttempts": 4, "delayS": 0.05, "reason": "429 slow down",
                          "text": retries[0]["text"]}
    waits = [c for c in chunks if c["type"] == "data-nova-waiting"]
    assert all(c["transient"] and c["id"] == "waiting" for c in waits)
    assert [c["data"]["waiting"] for c in waits] == [True, True, True, False]
    assert [c["data"]["attempt"] for c in waits[:3]] == [1, 2, 3]
    # The wait ends before the answer's first text.
    types = [c["type"] for c in chunks]
    last_wait = max(i for i, c in enumerate(chunks) if c["type"] == "data-nova-waiting")
    assert last_wait < types.index("text-delta")
