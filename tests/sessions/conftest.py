"""Shared builders for the session-record tests."""

from __future__ import annotations

from nova.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart


def user(text: str, id: str) -> Message:
    return Message(role="user", parts=(TextPart(text),), id=id, created_at=1.0)


def assistant_call(id: str, *call_ids: str, thinking: bool = False) -> Message:
    parts: list = [ThinkingPart("secret reasoning", signature="sig")] if thinking else []
    parts.append(TextPart("let me look"))
    parts.extend(ToolUsePart(id=c, name="bash", input={"command": f"echo {c}"}) for c in call_ids)
    return Message(role="assistant", parts=tuple(parts), id=id, created_at=2.0)


def results(id: str, *call_ids: str) -> Message:
    return Message(
        role="user", parts=tuple(ToolResultPart(tool_use_id=c, content=f"out {c}") for c in call_ids), id=id, created_at=3.0
    )
