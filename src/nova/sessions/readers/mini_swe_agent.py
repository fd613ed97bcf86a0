"""mini-swe-agent `.traj.json`: OpenAI-shaped messages, one fenced bash block per assistant turn (```bash
in 1.x, ```mswea_bash_command in 2.x); each block becomes a `bash` tool_use {command} and the next user
message its tool_result. `extra.response.usage` is kept as normalized usage in message metadata.

mini-swe-agent 2 (`trajectory_format` mini-swe-agent-1.1) may also use native tool calls (`tool_calls`
with `tool` messages), and ends with a `role: "exit"` message, which the model never saw: it goes to
`meta["exit"]`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nova.messages import Part, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, DocumentReader, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, arguments, load_document, text_of

NAME = "mini-swe-agent"
# The action format mini-swe-agent's default config asks for: exactly one fenced bash block.
_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)


class MiniSweAgentReader(DocumentReader):
    name = NAME

    def document_confidence(self, doc: dict[str, Any]) -> Confidence:
        info = doc.get("info")
        if str(doc.get("trajectory_format", "")).startswith("mini-swe-agent"):
            return sure(1.0)
        if isinstance(info, dict) and "mini_version" in info and isinstance(doc.get("messages"), list):
            return sure(0.95)
        return refuse("no `trajectory_format` mini-swe-agent and no `info.mini_version`")

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        doc = load_document(path)
        b = Builder()
        open_call: ToolUsePart | None = None
        exit_note: dict[str, Any] | None = None
        # The source's own actions: native calls and single bash blocks; observations answer them.
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}
        for index, m in enumerate(doc["messages"]):
            role, content = m["role"], text_of(m.get("content"))
            if role == "system":
                b.system.append(content)
                continue
            if role == "assistant":
                response = (m.get("extra") or {}).get("response") or {}
                metadata: dict[str, Any] = {}
                usage = response.get("usage")
                if isinstance(usage, dict):
                    metadata["usage"] = Usage.from_dict(usage).to_dict()
                    if isinstance(usage.get("cost"), int | float):
                        metadata["cost_usd"] = float(usage["cost"])
                if response.get("model"):
                    metadata["model"] = response["model"]
                blocks = list(_BASH_BLOCK.finditer(content))
                open_call = None
                parts: list[Part] = []
                if m.get("tool_calls"):
                    # A tool-calling model: the calls are native, their results come as `tool` messages.
                    parts = [TextPart(content)] if content else []
                    for tc in m["tool_calls"]:
                        fn = tc.get("function") or {}
                        parts.append(ToolUsePart(id=str(tc["id"]), name=str(fn.get("name", "")),
                                                 input=arguments(fn.get("arguments"))))
                elif len(blocks) == 1:
                    # One action: the agent ran it. The prose around the block stays as text.
                    block = blocks[0]
                    prose = (content[: block.start()] + content[block.end() :]).strip()
                    if prose:
                        parts.append(TextPart(prose))
                    open_call = ToolUsePart(id=f"bash-{index:05d}", name="bash", input={"command": block.group(1)})
                    parts.append(open_call)
                else:
                    # Zero or several blocks: mini-swe-agent ran nothing and answered with a format error.
                    parts.append(TextPart(content))
                b.add("assistant", parts, index, response.get("created"), metadata)
                counts["responses"] += 1
                counts["tool_calls"] += len(m.get("tool_calls") or ()) or open_call is not None
            elif role == "tool":
                b.add_results([ToolResultPart(tool_use_id=str(m["tool_call_id"]), content=content)], index)
                counts["tool_results"] += 1
            elif role == "exit":
                exit_note = {"content": content, **(m.get("extra") or {})}
            elif role == "user":
                if open_call is not None:
                    b.add("user", [ToolResultPart(tool_use_id=open_call.id, content=content)], index)
                    counts["tool_results"] += 1
                    open_call = None
                else:
                    b.add("user", [TextPart(content)], index)
            else:
                raise ValueError(f"message {index}: unexpected role {role!r}")
        info = doc.get("info") or {}
        config = info.get("config") or {}
        model_config = config.get("model") or {} if isinstance(config, dict) else {}
        meta = {
            "instance_id": doc.get("instance_id"),
            "exit_status": info.get("exit_status"),
            "mini_version": info.get("mini_version"),
            "model": model_config.get("model_name") if isinstance(model_config, dict) else None,
            "model_stats": info.get("model_stats"),
            "exit": exit_note,
            "source_counts": counts,
        }
        return ImportedSession(messages=b.messages, system="\n\n".join(b.system), format=NAME, source_path=path,
                               meta={k: v for k, v in meta.items() if v is not None})
