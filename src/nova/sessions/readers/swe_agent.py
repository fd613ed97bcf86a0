"""SWE-agent `.traj`: `history` with native OpenAI-shaped `tool_calls` and `tool` messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nova.messages import Part, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.readers.base import Confidence, DocumentReader, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, arguments, load_document, text_of

NAME = "swe-agent"


class SweAgentReader(DocumentReader):
    name = NAME

    def document_confidence(self, doc: dict[str, Any]) -> Confidence:
        if not isinstance(doc.get("history"), list):
            return refuse("no `history` list")
        return sure(0.9)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        doc = load_document(path)
        b = Builder()
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}
        for index, m in enumerate(doc["history"]):
            role = m["role"]
            content = text_of(m.get("content"))
            extra = {"is_demo": True} if m.get("is_demo") else {}
            if role == "system":
                b.system.append(content)
            elif role == "assistant":
                parts: list[Part] = [TextPart(content)] if content else []
                for tc in m.get("tool_calls") or ():
                    fn = tc.get("function") or {}
                    parts.append(ToolUsePart(id=str(tc["id"]), name=str(fn.get("name", "")),
                                             input=arguments(fn.get("arguments"))))
                b.add("assistant", parts or [TextPart("")], index, metadata=extra)
                counts["responses"] += 1
                counts["tool_calls"] += len(m.get("tool_calls") or ())
            elif role == "tool":
                ids = m.get("tool_call_ids") or ([m["tool_call_id"]] if m.get("tool_call_id") else [])
                if not ids:
                    raise ValueError(f"history[{index}]: tool message without tool_call_ids")
                b.add_results([ToolResultPart(tool_use_id=str(i), content=content) for i in ids], index)
                counts["tool_results"] += len(ids)
            elif role == "user":
                b.add("user", [TextPart(content)], index, metadata=extra)
            else:
                raise ValueError(f"history[{index}]: unexpected role {role!r}")
        info = doc.get("info") or {}
        meta = {k: info[k] for k in ("exit_status", "model_stats", "swe_agent_version") if k in info}
        meta["source_counts"] = counts
        return ImportedSession(messages=b.messages, system="\n\n".join(b.system), format=NAME, source_path=path,
                               meta=meta)
