"""`GET /api/sessions/{id}/context`: the one figure (TOK-3) and what is in the context, message by message.

`used`, `limit` and `percent` are `agent.context_status()`, the same ledger figure the compaction
decision, the TUI bar and the page bar read. The per-segment breakdown below it is an estimate for
reading ("what is taking the room"), with the field names of `nova context --json`. With the context
compiler attached they are the manifest's segments (CTX-2), which sum to `used`; without it `manifest`
is null, `manifest_status` says so, and the rows are one per message.
"""

from __future__ import annotations

from typing import Any

from nova import events as ev
from nova.agent.calls import calls_report
from nova.agent.loop import Agent
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.present.figures import cache_hit_rate, session_cost
from nova.present.text import one_line
from nova.sessions.meta import SessionMeta
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
    return one_line(text, PREVIEW_CHARS)


def segments(agent: Agent) -> list[dict[str, Any]]:
    """What is in context, with the field names of `nova context --json` (id, class, source, tokens,
    reason): the compiler's manifest segments when it is attached, else one row per message."""
    counter = agent.ledger.counter
    out: list[dict[str, Any]] = [
        {"id": "system", "class": "always-on", "source": "system", "tokens": count_system(agent.system_prompt, counter),
         "reason": _preview(Message.system(agent.system_prompt))},
        {"id": "tools", "class": "index", "source": "tools", "tokens": count_tools(agent.tools.specs(), counter),
         "reason": ", ".join(agent.tools.names())},
    ]
    for message in list(agent.history):
        out.append({"id": f"message:{message.id}", "class": _kind(message), "source": f"message:{message.id}",
                    "tokens": count_message(message, counter), "reason": _preview(message)})
    return out


def context_report(agent: Agent, status: ev.ContextUpdate, *, compacting: bool, running: bool,
                   meta: SessionMeta) -> dict[str, Any]:
    """`status` is `agent.context_status()` (or, mid-turn, the last figure the agent emitted). With the
    context compiler attached, `segments` are the manifest's (they sum to `used`, counted the same way
    as the bar, `nova context` and the TUI's `/context`). `meta` gives the session's model, cost (null
    unless every call was priced), its model calls by purpose and cache hit rate, computed as `nova run`
    and the TUI footer compute them (`nova.present.figures`)."""
    manifest = _manifest(agent)
    rows = manifest["manifest"]["segments"] if manifest["manifest"] is not None else segments(agent)
    return {
        "session_id": agent.session_id,
        "provider": meta.provider,
        "model": meta.model,
        "cost_usd": session_cost(meta.model, meta.cost_usd, known=meta.cost_known),
        "calls": calls_report(meta.calls),
        "cache_hit_rate": cache_hit_rate(meta.usage),
        "used": status.used,
        "limit": status.limit,
        "window": status.window,
        "percent": status.percent,
        "compacting": compacting,
        "running": running,
        **manifest,
        "segments": rows,
    }


def _manifest(agent: Agent) -> dict[str, Any]:
    """CTX-2: the compiler's manifest of the view last sent (or of the view as it stands before the
    first call): every segment with its class, source, tokens and reason, and what was left out."""
    from nova.agent.context_runtime import ContextRuntime
    from nova.context.report import context_json

    runtime = agent.extensions.get(ContextRuntime)
    if runtime is None:
        return {"manifest": None, "manifest_status": MANIFEST_ABSENT}
    # The history as it stands, compiled as the next call will be: the figure `context_status` gives.
    compiled = runtime.compile(list(agent.history), system=agent.system_prompt, tools=agent.tools.specs())
    return {"manifest": context_json(compiled), "manifest_status": "compiled"}
