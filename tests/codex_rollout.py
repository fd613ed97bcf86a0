"""Records of a Codex rollout (`~/.codex/sessions/**/rollout-*.jsonl`), for tests that write one."""

from __future__ import annotations

from typing import Any


def response_item(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response_item", "timestamp": "2026-01-01T00:00:00Z", "payload": payload}


def token_count(total: int, used: dict[str, int]) -> dict[str, Any]:
    """The event that closes a response: the session's running total and this response's usage."""
    return {"type": "event_msg", "timestamp": "2026-01-01T00:00:01Z", "payload": {
        "type": "token_count", "info": {"total_token_usage": {"total_tokens": total}, "last_token_usage": used}}}
