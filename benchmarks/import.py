"""Import benchmark: read and replay every shared session file, per format, against what the source holds.

    python benchmarks/import.py

Files: every file under `sessions/agentlogs/` and `trajectories/` of the shared data (NOVA_SHARED_DATA).
Per format it prints files, import speed, responses matched, pairing errors and files-changed recall.

Definitions (stated so the figures can be checked):
- import speed: bytes / best-of-3 wall time of `read_session_file` (detection included), over all files of
  the format; records per second counts JSON lines (or list messages for one-document formats).
- responses matched: imported assistant messages = the responses the source holds, counted from the raw
  file here, independently of the readers (Claude Code: distinct `message.id` of main-chain assistant
  records; Codex: `token_count` events whose totals moved; OpenCode: `info.role` assistant; pi:
  assistant entries on the branch ending at the last entry; chat lists and trajectories: `role`
  assistant). A file counts as matched when the two numbers are equal.
- pairing errors: `check_tool_pairing` over the imported messages after the repair replay applies
  (`repair_history`; a session that ended on an unanswered call is not an import error); the raw count
  is printed beside it.
- files-changed recall: the paths the source's edit calls name (Claude Code Edit/MultiEdit/Write/
  NotebookEdit, OpenCode and pi write/edit, Cline write_to_file/replace_in_file, Codex and OpenCode
  apply_patch headers, SWE-agent str_replace_editor create/str_replace/insert) found in the "Files
  changed" section of the extractive summary of the whole imported session.
- the replay: `nova`'s policy at a 32k window over each imported session; its invariant violations
  are added to the pairing errors.

Targets: 100 % responses matched, 0 pairing errors, recall >= 95 %, import >= 20 MB/s. Last line:
{"formats": {...}, "responses_matched_pct", "pairing_errors", "files_changed_recall", "mb_per_s"}.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from nova.context.summarize import ExtractiveSummarizer, SummaryRequest
from nova.evaluation.replay import replay_messages
from nova.history.invariants import check_tool_pairing
from nova.history.tool_paths import SHELL_TOOLS, paths_of
from nova.messages import Message
from nova.sessions.importers import read_session_file
from nova.sessions.repair import repair_history
from nova.testing import shared_data_dir

TARGET_MATCHED, TARGET_RECALL, TARGET_MB_S = 100.0, 95.0, 20.0


def source_files() -> list[Path]:
    root = shared_data_dir()
    found = sorted((root / "sessions" / "agentlogs").glob("*/*.json*"))
    found += sorted((root / "trajectories").glob("*/*.traj*"))
    return found


def source_responses(path: Path, fmt: str) -> int:
    text = path.read_text(encoding="utf-8")
    if fmt == "claude-code":
        ids = set()
        for line in text.splitlines():
            r = json.loads(line) if line.strip() else {}
            if r.get("type") == "assistant" and not r.get("isSidechain"):
                ids.add((r.get("message") or {}).get("id"))
        return len(ids)
    if fmt == "codex":
        seen, count = None, 0
        for line in text.splitlines():
            r = json.loads(line)
            p = r.get("payload") or {}
            if r.get("type") == "event_msg" and p.get("type") == "token_count" and p.get("info"):
                totals = p["info"].get("total_token_usage")
                count += totals != seen
                seen = totals
        return count
    if fmt == "pi":
        entries = {}
        last = None
        for line in text.splitlines():
            r = json.loads(line)
            if r.get("type") != "session":
                entries[r["id"]] = r
                last = r["id"]
        count = 0
        while last is not None:
            r = entries[last]
            count += r.get("type") == "message" and r["message"].get("role") == "assistant"
            last = r.get("parentId")
        return count
    doc = json.loads(text)
    if fmt == "opencode":
        return sum(m["info"]["role"] == "assistant" for m in doc["messages"])
    items = doc if isinstance(doc, list) else doc.get("history") if fmt == "swe-agent" else doc["messages"]
    return sum(m.get("role") == "assistant" for m in items)


def source_edits(messages: list[Message]) -> set[str]:
    """The files the source's edit tool calls change (shell commands are not edit calls), by the declared
    map of tools in `nova.history.tool_paths`."""
    return {p for m in messages for call in m.tool_uses() if call.name.lower() not in SHELL_TOOLS
            for p in paths_of(call).writes}


def files_changed(messages: list[Message]) -> list[str]:
    summary = ExtractiveSummarizer().summarize(SummaryRequest(older=messages, max_tokens=200_000))
    section = summary.split("## Files changed", 1)[1].split("\n## ", 1)[0] if "## Files changed" in summary else ""
    return [line[2:].rsplit(" (msg", 1)[0].strip() for line in section.splitlines() if line.startswith("- ")]


def recalled(target: str, listed: list[str]) -> bool:
    t = target.lstrip("./")
    return any(p.lstrip("./") == t or t.endswith("/" + p.lstrip("./")) or p.endswith("/" + t) for p in listed)


def main() -> int:
    files = source_files()
    if not files:
        print(f"no shared session files under {shared_data_dir()}; set NOVA_SHARED_DATA", file=sys.stderr)
        return 2
    logging.getLogger("nova").setLevel(logging.ERROR)
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(float))
    for path in files:
        size = path.stat().st_size
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            imported = read_session_file(path)
            best = min(best, time.perf_counter() - start)
        fmt = imported.format
        text = path.read_text(encoding="utf-8")
        records = len(text.splitlines()) if text.lstrip().startswith("{") and "\n{" in text else len(imported.messages)
        s = stats[fmt]
        s["files"] += 1
        s["bytes"] += size
        s["seconds"] += best
        s["records"] += records
        responses = sum(m.role == "assistant" for m in imported.messages)
        s["matched_files"] += responses == source_responses(path, fmt)
        s["raw_pairing"] += len(check_tool_pairing(imported.messages))
        repaired, _ = repair_history(imported.messages)
        s["pairing"] += len(check_tool_pairing(repaired))
        report = replay_messages(imported.messages, system=imported.system, window=32000, policy="nova")
        s["pairing"] += report.invariant_violations
        edits = source_edits(imported.messages)
        listed = files_changed(imported.messages) if edits else []
        s["edits"] += len(edits)
        s["edits_found"] += sum(recalled(e, listed) for e in edits)
    formats: dict[str, Any] = {}
    print(f"{'format':<16}{'files':>6}{'MB/s':>9}{'rec/s':>10}{'matched':>9}{'pairing':>9}{'raw':>6}{'recall':>9}")
    for fmt, s in sorted(stats.items()):
        row = {"files": int(s["files"]), "mb_per_s": round(s["bytes"] / s["seconds"] / 1e6, 2),
               "records_per_s": round(s["records"] / s["seconds"]),
               "responses_matched_pct": round(100 * s["matched_files"] / s["files"], 1),
               "pairing_errors": int(s["pairing"]), "raw_pairing_errors": int(s["raw_pairing"]),
               "files_changed_recall": round(100 * s["edits_found"] / s["edits"], 1) if s["edits"] else None}
        formats[fmt] = row
        recall = "-" if row["files_changed_recall"] is None else f"{row['files_changed_recall']:.0f}%"
        print(f"{fmt:<16}{row['files']:>6}{row['mb_per_s']:>9.1f}{row['records_per_s']:>10,}"
              f"{row['responses_matched_pct']:>8.0f}%{row['pairing_errors']:>9}{row['raw_pairing_errors']:>6}{recall:>9}")
    total = {k: sum(s[k] for s in stats.values()) for k in ("files", "matched_files", "pairing", "edits", "edits_found",
                                                            "bytes", "seconds")}
    result = {
        "formats": formats,
        "responses_matched_pct": round(100 * total["matched_files"] / total["files"], 1),
        "pairing_errors": int(total["pairing"]),
        "files_changed_recall": round(100 * total["edits_found"] / total["edits"], 1) if total["edits"] else None,
        "mb_per_s": round(total["bytes"] / total["seconds"] / 1e6, 2),
    }
    misses = []
    if result["responses_matched_pct"] < TARGET_MATCHED:
        misses.append(f"responses matched {result['responses_matched_pct']}% < {TARGET_MATCHED}%")
    if result["pairing_errors"]:
        misses.append(f"{result['pairing_errors']} pairing errors > 0")
    if result["files_changed_recall"] is not None and result["files_changed_recall"] < TARGET_RECALL:
        misses.append(f"files-changed recall {result['files_changed_recall']}% < {TARGET_RECALL}%")
    if result["mb_per_s"] < TARGET_MB_S:
        misses.append(f"import {result['mb_per_s']} MB/s < {TARGET_MB_S} MB/s")
    for miss in misses:
        print(f"MISSED: {miss}")
    print(json.dumps(result, sort_keys=True))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
