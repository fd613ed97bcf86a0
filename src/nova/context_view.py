"""`GET /api/sessions/{id}/context`: the one figure (TOK-3) and what is in the context, message by message.

`used`, `limit` and `percent` are `agent.context_status()`, the same ledger figure the compaction
decision, the TUI bar and the page bar read. The per-segment breakdown below it is an estimate for
reading ("what is taking the room"), not a second figure: its sum may differ from `used`, which also
counts the provider's real report of the last call. The manifest (CTX-2) comes with the context
compiler, which has not landed: `manifest` is null until then and `manifest_status` says so.
"""

from __future__ import annotations

from typing import Any

from nova import events as ev
from nova.agent.loop import Agent
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.tokens import count_message, count_system, count_tools

__all__ = ["MANIFEST_ABSENT", "context_report", "segments"]

MANIFEST_ABSENT = "absent: no context compiler is attached to this agent"
PREVIEW_CHARS = 160


def _kind(message: Message) -> str:
    if message.has("summary"):
        return "summary"
    if message.tool_results():
        return "tool_result"
    if message.tool_uses():
        return "tool_use"
    return "text"


def _preview(message: Message) -> str:
    for part in message.parts:
        if isinstance(part, TextPart | SummaryPart) and part.text.strip():
            text = part.text
            break
        if isinstance(part, ToolUsePart):
            text = f"{part.name}({', '.join(f'{k}={v!r}' for k, v in part.input.items())})"
            break
        if isinstance(part, ToolResultPart):
            text = part.content
            break
    else:
        text = ""
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def segments(agent: Agent) -> list[dict[str, Any]]:
    counter = agent.ledger.counter
    out: list[dict[str, Any]] = [
        {"source": "system", "kind": "system", "tokens": count_system(agent.system_prompt, counter),
         "preview": _preview(Message.system(agent.system_prompt))},
        {"source": "tools", "kind": "tools", "tokens": count_tools(agent.tools.specs(), counter),
         "preview": ", ".join(agent.tools.names())},
    ]
    for message in list(agent.history):
        out.append({"source": f"message:{message.id}", "kind": _kind(message), "role": message.role,
                    "tokens": count_message(message, counter), "preview": _preview(message)})
    return out


def context_report(agent: Agent, status: ev.ContextUpdate, *, compacting: bool, running: bool) -> dict[str, Any]:
    """`status` is `agent.context_status()` (or, mid-turn, the last figure the agent emitted)."""
    return {
        "session_id": agent.session_id,
        "used": status.used,
        "limit": status.limit,
        "window": status.window,
        "percent": status.percent,
        "compacting": compacting,
        "running": running,
        **_manifest(agent),
        "segments": segments(agent),
    }


def _manifest(agent: Agent) -> dict[str, Any]:
    """CTX-2: the compiler's manifest of the view last sent (or of the view as it stands before the
    first call): every segment with its class, source, tokens and reason, and what was left out."""
    from nova.commands.context import context_json
    from nova.context.runtime import ContextRuntime

    runtime = agent.extensions.get(ContextRuntime)
    if runtime is None:
        return {"manifest": None, "manifest_status": MANIFEST_ABSENT}
    compiled = runtime.last or runtime.compile(list(agent.history), system=agent.system_prompt,
                                               tools=agent.tools.specs())
    return {"manifest": context_json(compiled), "manifest_status": "compiled"}
