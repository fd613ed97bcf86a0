"""An OpenCode session export (`opencode export`): `{"info": session, "messages": [{"info": {role, …},
"parts": [...]}]}`. One assistant message is one model response: its `text` parts and `tool` parts
(`callID`, `tool`, `state.input`, `state.output` / `state.error`) become an assistant message with the
calls, followed by a user message with their results. `reasoning`, `step-*` and `patch` parts are not
conversation; `info.tokens` is the response's usage.

A user message's `text` parts are what the person typed, except those OpenCode marks `synthetic` (the
text it adds itself: a file attached, a tool it ran for the user), which are marked `harness`. Its own
compaction — a user message holding a `compaction` part, answered by an assistant message with
`info.summary` true — becomes a Nova summary marked `compaction`, covering everything before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nova.messages import Part, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, DocumentReader, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, arguments, count_response, load_document

NAME = "opencode"


class OpenCodeReader(DocumentReader):
    name = NAME

    def document_confidence(self, doc: dict[str, Any]) -> Confidence:
        messages = doc.get("messages")
        if not isinstance(messages, list):
            return refuse("no `messages` list")
        for index, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("info"), dict):
                return refuse(f"messages[{index}]: no `info` object")
            if not isinstance(m.get("parts"), list):
                return refuse(f"messages[{index}]: no `parts` list")
            if m["info"].get("role") not in ("user", "assistant"):
                return refuse(f"messages[{index}].info: `role` is {m['info'].get('role')!r}")
        return sure(0.95)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        doc = load_document(path)
        b = Builder()
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}
        covered_upto = 0
        for index, m in enumerate(doc["messages"]):
            info = m["info"]
            ts = (info.get("time") or {}).get("created")
            ts = ts / 1000 if isinstance(ts, int | float) else None
            texts: list[Part] = [TextPart(str(p["text"]), harness=bool(p.get("synthetic")))
                                 for p in m["parts"] if p.get("type") == "text" and p.get("text")]
            if info["role"] == "user":
                if any(p.get("type") == "compaction" for p in m["parts"]) and not any(
                        isinstance(t, TextPart) and not t.harness for t in texts):
                    continue  # the request for OpenCode's own compaction: the summary follows
                b.add("user", texts or [TextPart("")], 2 * index, ts)
                continue
            if info.get("summary") is True:
                summary = "\n\n".join(t.text for t in texts if isinstance(t, TextPart))
                if summary.strip():
                    covers = tuple(x.id for x in b.messages[covered_upto:])
                    b.add("user", [SummaryPart(summary, covers=covers)], 2 * index, ts,
                          {"compaction": {"source": "opencode", "trigger": "auto"}})
                    covered_upto = len(b.messages)
                continue
            calls: list[Part] = []
            results: list[ToolResultPart] = []
            for p in m["parts"]:
                if p.get("type") != "tool":
                    continue
                state = p.get("state") or {}
                call_id = str(p["callID"])
                calls.append(ToolUsePart(id=call_id, name=str(p.get("tool", "")), input=arguments(state.get("input"))))
                if state.get("status") not in ("completed", "error"):
                    continue  # still pending or running when the export was made: it has no result
                failed = state.get("status") == "error"
                output = state.get("error") if failed else state.get("output")
                results.append(ToolResultPart(tool_use_id=call_id, content=str(output or ""), is_error=failed))
            count_response(counts, calls=len(calls), results=len(results))
            metadata: dict[str, Any] = {}
            tokens = info.get("tokens")
            if isinstance(tokens, dict):
                cache = tokens.get("cache") or {}
                metadata["usage"] = Usage(input_tokens=int(tokens.get("input") or 0),
                                          output_tokens=int(tokens.get("output") or 0),
                                          reasoning_tokens=int(tokens.get("reasoning") or 0),
                                          cache_read_tokens=int(cache.get("read") or 0),
                                          cache_write_tokens=int(cache.get("write") or 0)).to_dict()
            if info.get("modelID"):
                metadata["model"] = str(info["modelID"])
            if isinstance(info.get("cost"), int | float) and info["cost"]:
                metadata["cost_usd"] = float(info["cost"])
            b.add("assistant", [*texts, *calls] or [TextPart("")], 2 * index, ts, metadata)
            if results:
                b.add("user", results, 2 * index + 1, ts)  # ids stay unique
        session = doc.get("info") or {}
        meta = {"session_id": session.get("id"), "cwd": session.get("directory"), "title": session.get("title"),
                "opencode_version": session.get("version")}
        return ImportedSession(messages=b.messages, system="", format=NAME, source_path=path,
                               meta={**{k: v for k, v in meta.items() if v}, "source_counts": counts})
