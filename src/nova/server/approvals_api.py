"""`POST /api/sessions/{id}/approvals/{call_id}`: the answer to a tool call waiting for approval.

The call and its id come in the turn's stream as a `tool-approval-request` chunk (`toolCallId`); the
answer is `{"decision": "once" | "session" | "deny"}`. 404: no such session, or no such call waiting
in it; 409: the call was answered already (or timed out, which denied it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Path, Request
from pydantic import BaseModel, ConfigDict

from nova.host.hub import SessionHub
from nova.server.approvals import ApprovalAnswered, ApprovalDesk, ApprovalNotFound
from nova.server.responses import SafeJSONResponse
from nova.server.schemas import SESSION_ID_PATTERN
from nova.tools.approval import Answer

__all__ = ["ApprovalIn", "ApprovalOut", "add_approval_routes"]

CALL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$"


class ApprovalIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decision: Literal["once", "session", "deny"]
    """once: run this call; session: run it and every call the same rule (or tool) asks about while the
    session is open; deny: refuse it."""


class ApprovalOut(BaseModel):
    call_id: str
    decision: Literal["once", "session", "deny"]


def add_approval_routes(app: FastAPI, hub: SessionHub, desk: ApprovalDesk) -> None:
    def handler(status: int) -> Callable[[Request, Exception], Any]:
        async def respond(_: Request, exc: Exception) -> SafeJSONResponse:
            return SafeJSONResponse({"detail": str(exc)}, status_code=status)

        return respond

    app.add_exception_handler(ApprovalNotFound, handler(404))
    app.add_exception_handler(ApprovalAnswered, handler(409))

    @app.post(
        "/api/sessions/{session_id}/approvals/{call_id}",
        tags=["turns"],
        responses={404: {"description": "No such session, or no such tool call waiting for approval in it."},
                   409: {"description": "The call was answered already, or its time ran out (a denial)."}},
    )
    def answer_approval(
        session_id: Annotated[str, Path(pattern=SESSION_ID_PATTERN, max_length=128)],
        call_id: Annotated[str, Path(pattern=CALL_ID_PATTERN, max_length=256)],
        body: ApprovalIn,
    ) -> ApprovalOut:
        """Answer a tool call the turn's stream asked about (`tool-approval-request`, its `toolCallId`).
        Waiting calls are denied after the server's `approval_timeout_s` (default 300 s)."""
        hub.check(session_id)
        desk.answer(session_id, call_id, Answer(body.decision))
        return ApprovalOut(call_id=call_id, decision=body.decision)
