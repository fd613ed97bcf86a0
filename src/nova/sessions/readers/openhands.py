"""OpenHands event streams: a trajectory (a JSON list of events, or an object with `history`), or a
resolver / evaluation `output.jsonl`, one run per line (`history` plus the evaluation's `instance_id` or
the resolver's `issue`): every run becomes a session of its own (`ImportedSession.siblings`), named in
`meta["run"]` by its instance id, its issue (`owner/repo#12`) or its line.

An event is an action (`action`, `args`, `source` user/agent) or an observation (`observation`,
`content`, `cause`). Agent actions made through function calling carry `tool_call_metadata`
(`function_name`, `tool_call_id`, `model_response` with its `id` and `usage`): the actions sharing one
`model_response.id` are one response, reassembled into one assistant message with all its calls, and
the observations carrying the same `tool_call_id`s become their results, in call order. A `system`
action is the system prompt; user `message` actions are requests; agent `message` actions without
metadata are replies. A `condensation` action with a `summary` (OpenHands' own compaction) becomes a Nova
summary marked `compaction`, covering the messages of the events it forgot (`forgotten_event_ids`, or
the `forgotten_events_start_id`..`end_id` range; `pruned_*` in older versions). When the response itself is not recorded, the `thought` its first action carries
stands in for its text. Bookkeeping events (agent state changes, recalls, null) are counted in
`meta["ignored_events"]`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nova.fs.safe_read import loads
from nova.messages import Part, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, ImportedSession, SkippedRecord, refuse, sure
from nova.sessions.readers.common import Builder, arguments, iso_ts, json_lines, load_text, mid, text_of

NAME = "openhands"
_BOOKKEEPING = ("agent_state_changed", "change_agent_state", "recall", "null", "condensation")


def _is_event(value: Any) -> bool:
    return isinstance(value, dict) and ("action" in value or "observation" in value) and "source" in value


class OpenHandsReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        if not head_records:
            return refuse("no records")
        first = head_records[0]
        events = first if isinstance(first, list) else first.get("history") if isinstance(first, dict) else None
        if not isinstance(events, list) or not events:
            return refuse("neither a list of events nor an object with a `history` list")
        if not _is_event(events[0]):
            return refuse("event 0: no `action`/`observation` and `source` fields")
        return sure(0.95)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        text = load_text(path)
        skipped: list[SkippedRecord] = []
        runs: list[tuple[str, Any]] = []
        try:
            whole = loads(text)
            runs.append((_run_label(whole, 0) if isinstance(whole, dict) else "", whole))
        except ValueError:
            for number, run in json_lines(text, skipped):
                if not isinstance(run.get("history"), list):
                    skipped.append(SkippedRecord(f"line {number}", "no `history` list of events"))
                    continue
                runs.append((_run_label(run, number), run))
        if not runs:
            raise ValueError("no run with a `history` list of events")
        sessions = [_read_run(path, doc, label) for label, doc in runs]
        first = sessions[0]
        return replace(first, skipped=(*skipped, *first.skipped), siblings=tuple(sessions[1:]))


def _run_label(run: dict[str, Any], line: int) -> str:
    """The run's instance id, its issue (`owner/repo#12`), or its line (0: a one-document file)."""
    if run.get("instance_id"):
        return str(run["instance_id"])
    issue = run.get("issue")
    if isinstance(issue, dict) and issue.get("number") is not None:
        return f"{issue.get('owner', '')}/{issue.get('repo', '')}#{issue['number']}".lstrip("/")
    return f"line {line}" if line else ""


def _read_run(path: Path, doc: Any, label: str) -> ImportedSession:
    events = doc if isinstance(doc, list) else doc["history"]
    meta: dict[str, Any] = {"run": label} if label else {}
    if isinstance(doc, dict):
        meta.update({k: doc[k] for k in ("instance_id",) if k in doc})
    skipped: list[SkippedRecord] = []
    a = _Assembly()
    for index, event in enumerate(events):
        try:
            a.event(index, event)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            skipped.append(SkippedRecord(f"{label + ' ' if label else ''}event {index}", f"could not be read: {exc!r}"))
    a.close()
    meta["ignored_events"] = dict(a.ignored)
    meta["source_counts"] = {"responses": len(a.responses), "tool_calls": a.calls, "tool_results": a.results_seen}
    return ImportedSession(messages=a.b.messages, system="\n\n".join(a.b.system), format=NAME, source_path=path,
                           meta=meta, skipped=tuple(skipped))


@dataclass(slots=True)
class _Assembly:
    b: Builder = field(default_factory=Builder)
    response_id: str | None = None
    response_at: tuple[int, float | None] = (0, None)
    parts: list[Part] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    results: list[ToolResultPart] = field(default_factory=list)
    results_at: int = 0
    responses: set[str] = field(default_factory=set)
    calls: int = 0
    results_seen: int = 0
    ignored: Counter[str] = field(default_factory=Counter)
    event_ids: dict[str, Any] = field(default_factory=dict)
    """Message id -> the `id` of the event it was made from (what a condensation names)."""

    def close(self) -> None:
        if self.parts:
            metadata = {"usage": Usage.from_dict(self.usage).to_dict()} if self.usage else {}
            self.b.add("assistant", self.parts, self.response_at[0], self.response_at[1], metadata)
        if self.results:
            order = {p.id: i for i, p in enumerate(self.parts) if isinstance(p, ToolUsePart)}
            self.b.add_results(sorted(self.results, key=lambda r: order.get(r.tool_use_id, len(order))),
                               self.results_at)
        self.response_id, self.parts, self.usage, self.results = None, [], None, []

    def event(self, index: int, e: dict[str, Any]) -> None:
        ts = iso_ts(e.get("timestamp"))
        meta = e.get("tool_call_metadata")
        kind = e.get("action") or e.get("observation")
        self.event_ids[mid(index)] = e.get("id")
        if e.get("action") == "condensation" and (e.get("args") or {}).get("summary"):
            self.condensation(index, ts, e["args"])
            return
        if kind in _BOOKKEEPING:
            self.ignored[str(kind)] += 1
            return
        if "action" in e:
            args = e.get("args") or {}
            if kind == "system":
                self.b.system.append(str(args.get("content") or e.get("message") or ""))
            elif isinstance(meta, dict):
                self.call(index, ts, meta, args)
            elif kind == "message":
                self.close()
                content = str(args.get("content") or e.get("message") or "")
                self.b.add("user" if e.get("source") == "user" else "assistant", [TextPart(content)], index, ts)
                if e.get("source") != "user":
                    self.responses.add(f"event-{index}")
            else:
                self.ignored[f"action:{kind}"] += 1
        elif isinstance(meta, dict) and meta.get("tool_call_id"):
            self.results_seen += 1
            result = ToolResultPart(tool_use_id=str(meta["tool_call_id"]), content=str(e.get("content", "")),
                                    is_error=kind == "error")
            if not self.results:
                self.results_at = index
            self.results.append(result)
        else:
            self.ignored[f"observation:{kind}"] += 1

    def condensation(self, index: int, ts: float | None, args: dict[str, Any]) -> None:
        self.close()
        listed = set(args.get("forgotten_event_ids") or args.get("pruned_event_ids") or ())
        start = args.get("forgotten_events_start_id", args.get("pruned_events_start_id"))
        end = args.get("forgotten_events_end_id", args.get("pruned_events_end_id"))

        def forgotten(event_id: Any) -> bool:
            if event_id in listed:
                return True
            return all(isinstance(v, int) for v in (start, end, event_id)) and start <= event_id <= end

        covers = tuple(m.id for m in self.b.messages if forgotten(self.event_ids.get(m.id)))
        self.b.add("user", [SummaryPart(str(args["summary"]), covers=covers)], index, ts,
                   {"compaction": {"source": "openhands", "trigger": "auto"}})

    def call(self, index: int, ts: float | None, meta: dict[str, Any], args: dict[str, Any]) -> None:
        response = meta.get("model_response") or {}
        response_id = str(response.get("id") or f"event-{index}")
        if response_id != self.response_id:
            self.close()
            self.response_id, self.response_at = response_id, (index, ts)
            self.responses.add(response_id)
            message = ((response.get("choices") or [{}])[0] or {}).get("message") or {}
            # Without the response, the first action's `thought` holds its text (a `think` call's own
            # argument has that name too, so it is never taken for text).
            text = text_of(message.get("content")) if response.get("choices") or meta.get("function_name") == "think" \
                else str(args.get("thought") or "")
            if text:
                self.parts.append(TextPart(text))
            self.usage = response.get("usage") if isinstance(response.get("usage"), dict) else None
        call_id = str(meta.get("tool_call_id") or f"call-{index}")
        self.parts.append(ToolUsePart(id=call_id, name=str(meta.get("function_name", "")),
                                      input=_raw_arguments(response, call_id) or dict(args)))
        self.calls += 1


def _raw_arguments(response: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    """The arguments exactly as the model wrote them, from the response the action came from."""
    for choice in response.get("choices") or ():
        for tc in ((choice or {}).get("message") or {}).get("tool_calls") or ():
            if isinstance(tc, dict) and str(tc.get("id")) == call_id:
                return dict(arguments((tc.get("function") or {}).get("arguments")))
    return None
