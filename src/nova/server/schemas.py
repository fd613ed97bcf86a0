"""Request and response bodies of the HTTP API (they are also what the OpenAPI document shows)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nova.agent.loop import DENIED_PREFIX
from nova.messages import Message, to_dict
from nova.server.approvals import Pending
from nova.sessions.meta import SessionMeta

__all__ = [
    "CompactRequest",
    "ContextOut",
    "CreateSession",
    "MemoryOut",
    "MessageOut",
    "SendMessage",
    "SessionDetail",
    "SessionOut",
    "message_out",
    "session_out",
]

# The same rule as `validate_session_id`, stated in the schema so clients (and schemathesis) see it.
SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
MAX_PROMPT_CHARS = 100_000


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(default="", max_length=200)


class SessionOut(BaseModel):
    id: str
    title: str
    cwd: str
    provider: str
    model: str
    created_at: float
    updated_at: float
    message_count: int
    cost_usd: float | None = Field(description="The session's cost; null when a call's price is unknown (never a "
                                               "silent 0).")
    compacted_at: float | None = None
    running: bool = False


class MessageOut(BaseModel):
    id: str
    role: str
    text: str
    parts: list[dict[str, Any]]


class SessionDetail(BaseModel):
    session: SessionOut
    messages: list[MessageOut]
    compactions: int
    pending_approvals: list[Pending] = Field(default_factory=list)
    """Calls waiting for an answer now (POST …/approvals/{call_id}): a page opened during the turn asks
    them again."""


class UIPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(max_length=100)
    text: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)


class UIMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(default="", max_length=200)
    role: str = Field(max_length=20)
    parts: list[UIPart] = Field(default_factory=list, max_length=1000)


class SendMessage(BaseModel):
    """Either `text`, or the body the AI SDK's `DefaultChatTransport` posts (`messages`, whose last user
    message is the new prompt: the server keeps the history, so earlier messages are not replayed)."""

    model_config = ConfigDict(extra="allow")
    text: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)
    messages: list[UIMessage] | None = Field(default=None, max_length=10_000)

    def prompt(self) -> str:
        if self.text is not None:
            return self.text.strip()
        for message in reversed(self.messages or []):
            if message.role == "user":
                return "".join(p.text or "" for p in message.parts if p.type == "text").strip()
        return ""


class CompactRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    focus: str = Field(default="", max_length=2000)


class ContextOut(BaseModel):
    session_id: str
    provider: str
    model: str
    cost_usd: float | None = Field(description="The session's cost so far; null when a call's price is unknown.")
    calls: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="The session's model calls by purpose (turn, compaction, memory_extraction, memory_recall, "
                    "subagent): calls, tokens, usage, cost_usd (null when a call's price is unknown), unpriced_calls.")
    cache_hit_rate: float | None = Field(description="Share of the session's input read from the prompt cache; "
                                                     "null before the first model call.")
    used: int
    limit: int
    window: int
    percent: float
    compacting: bool
    running: bool
    manifest: dict[str, Any] | None
    manifest_status: str
    segments: list[dict[str, Any]]


class CompactOut(BaseModel):
    changed: bool
    context: ContextOut


class MemoryOut(BaseModel):
    name: str
    description: str
    type: str
    status: str
    author: str
    body: str | None = None
    source: str = ""
    updated: str = ""
    # Why a candidate waits for the user's review (as `nova memory list --json` says it); None otherwise.
    review: str | None = None


def session_out(meta: SessionMeta, *, running: bool = False) -> SessionOut:
    return SessionOut(id=meta.id, title=meta.title, cwd=meta.cwd, provider=meta.provider, model=meta.model,
                      created_at=meta.created_at, updated_at=meta.updated_at, message_count=meta.message_count,
                      cost_usd=meta.cost_usd if meta.cost_known else None, compacted_at=meta.compacted_at,
                      running=running)


def message_out(message: Message) -> MessageOut:
    data = to_dict(message)
    parts = [_mark_denied(p) for p in data.get("parts", [])]
    return MessageOut(id=message.id, role=message.role, text=message.text, parts=parts)


def _mark_denied(part: dict[str, Any]) -> dict[str, Any]:
    """A tool result the permission policy wrote (the call never ran) says so: `denied: true`."""
    if part.get("kind") == "tool_result" and part.get("is_error") and str(part.get("content", "")).startswith(
            DENIED_PREFIX):
        return {**part, "denied": True}
    return part
