"""Tool-result budget at entry (SPILL-1..5): oversized results go to disk, history keeps a placeholder.

A result longer than `max_result_chars` is written whole to `<session_dir>/tool-results/<tool_use_id>.txt`
and replaced by a `<persisted-output>` placeholder holding the first `preview_chars` characters, the
file path and the size. When the results of one message still add up to more than `max_message_chars`,
the largest are spilled first until the message fits (SPILL-2).

Two exemptions keep this from misbehaving: reading a spilled file back is never spilled again (otherwise
the model could never see more than the preview: a read/spill loop, SPILL-3), and a result whose write
failed is kept whole and never retried against the same disk (SPILL-4); the failure is logged and
counted so nothing is lost silently.

The placeholder is decided once, when the result enters history, and never rewritten (SPILL-5): the
bytes the model saw stay the bytes of the cached prefix.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova.context.shown_paths import shown_path, shown_root
from nova.fs.private import private_dir, write_private_text
from nova.history.tool_paths import paths_in
from nova.messages import ToolResultPart, ToolUsePart
from nova.settings import SpillConfig

__all__ = ["PLACEHOLDER_OPEN", "SpillStats", "Spiller", "is_placeholder", "render_placeholder"]

log = logging.getLogger(__name__)

PLACEHOLDER_OPEN = "<persisted-output>"
PLACEHOLDER_CLOSE = "</persisted-output>"
RESULTS_DIR = "tool-results"
MAX_NAMED_PATHS = 12
# Argument names under which the built-in and common tools take a file path.
_PATH_KEYS = ("path", "file_path", "filename", "file")


@dataclass(kw_only=True)
class SpillStats:
    """What the spiller did in this session (reported by replay and the controller)."""

    spilled: int = 0
    spilled_chars: int = 0
    write_failures: int = 0
    exempt_rereads: int = 0
    failed_ids: list[str] = field(default_factory=list)


def render_placeholder(content: str, *, path: Path | str, preview_chars: int) -> str:
    """The `<persisted-output>` text that stands in for `content` (SPILL-1). The file paths named after
    the preview are listed: a few tokens that say what reading the file back would show."""
    preview = content[:preview_chars]
    # The last lines too: a command's verdict (the error, the test summary) is at the end of its output.
    tail_chars = preview_chars // 2
    rest = content[preview_chars:]
    tail = rest[-tail_chars:] if tail_chars and len(rest) > tail_chars else ""
    if tail and "\n" in tail:
        tail = tail[tail.index("\n") + 1:]
    named = paths_in(rest[: len(rest) - len(tail)])[:MAX_NAMED_PATHS]
    mentions = f"Files named after the preview: {', '.join(named)}\n" if named else ""
    ending = f"\n[...]\nLast {len(tail):,} characters:\n{tail}\n" if tail else "\n"
    return (
        f"{PLACEHOLDER_OPEN}\n"
        f"Output too large ({len(content):,} characters). Full output saved to: {path}\n"
        f"{mentions}"
        f"Read that file (in parts) if you need more than this preview of the first "
        f"{len(preview):,} characters:\n\n"
        f"{preview}{ending}"
        f"{PLACEHOLDER_CLOSE}"
    )


def is_placeholder(content: str) -> bool:
    return content.startswith(PLACEHOLDER_OPEN)


# The line that ends a placeholder's header; the output's own first characters follow it.
_PREVIEW_START = re.compile(r"Read that file \(in parts\) if you need more than this preview of the first [\d,]+ "
                            r"characters:\n\n")


def shown_output(content: str) -> str:
    """What a tool result shows of the output itself: for a placeholder, the text after its header (the
    preview, then the last lines); any other content as it is. A check that reads the output's start (an
    exit code) must not read the header, whose saved-file path can be longer than the check looks."""
    if not is_placeholder(content):
        return content
    match = _PREVIEW_START.search(content)
    return content[match.end():] if match else content


class Spiller:
    """Applies the entry budget to tool results. One instance per session (it remembers exemptions)."""

    def __init__(self, *, config: SpillConfig | None = None, session_dir: Path | None = None) -> None:
        self.config = config or SpillConfig()
        self.directory = session_dir / RESULTS_DIR if session_dir is not None else None
        self.stats = SpillStats()
        self._exempt: set[str] = set()  # tool_use ids never to spill (re-reads, failed writes)

    # -- SPILL-1 and SPILL-3: one result ------------------------------------------------------------
    def process_result(self, call: ToolUsePart | None, result: ToolResultPart) -> ToolResultPart:
        """Spill `result` when it alone is over the per-result limit."""
        if call is not None and self._is_reread(call.input):
            if len(result.content) > self.config.max_result_chars:
                self.stats.exempt_rereads += 1
            self._exempt.add(result.tool_use_id)
            return result
        if len(result.content) <= self.config.max_result_chars:
            return result
        return self._spill(result)

    # -- SPILL-2: one message -----------------------------------------------------------------------
    def process_message(self, results: Sequence[ToolResultPart]) -> list[ToolResultPart]:
        """Spill the largest results of one message until their total is within the message limit."""
        out = list(results)
        total = sum(len(r.content) for r in out)
        if total <= self.config.max_message_chars:
            return out
        order = sorted(range(len(out)), key=lambda i: len(out[i].content), reverse=True)
        for i in order:
            if total <= self.config.max_message_chars:
                break
            r = out[i]
            if is_placeholder(r.content) or r.tool_use_id in self._exempt:
                continue
            spilled = self._spill(r)
            total += len(spilled.content) - len(r.content)
            out[i] = spilled
        return out

    # -- internals ----------------------------------------------------------------------------------
    def _spill(self, result: ToolResultPart) -> ToolResultPart:
        if self.directory is None or result.tool_use_id in self._exempt:
            return result
        path = self.directory / f"{_safe_name(result.tool_use_id)}.txt"
        try:
            private_dir(self.directory)
            write_private_text(path, result.content)
        except OSError as exc:
            # SPILL-4: keep the result whole (nothing lost), never retry this one, make it visible.
            self._exempt.add(result.tool_use_id)
            self.stats.write_failures += 1
            self.stats.failed_ids.append(result.tool_use_id)
            log.warning("could not spill tool result %s to %s: %s; kept inline", result.tool_use_id, path, exc)
            return result
        self.stats.spilled += 1
        self.stats.spilled_chars += len(result.content)
        text = render_placeholder(result.content, path=shown_path(path), preview_chars=self.config.preview_chars)
        return ToolResultPart(tool_use_id=result.tool_use_id, content=text, is_error=result.is_error)

    def _is_reread(self, arguments: Mapping[str, Any]) -> bool:
        """True when the call reads a file this session spilled or snipped (SPILL-3)."""
        if self.directory is None:
            return False
        # The model names the directory as the placeholders show it (nova.context.shown_paths).
        roots = [os.path.normpath(self.directory.parent)]
        shown = shown_root(self.directory.parent)
        if shown is not None:
            roots.append(os.path.normpath(shown))
        for key in _PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                target = os.path.normpath(value)
                if any(target.startswith(root + os.sep) for root in roots):
                    return True
        command = arguments.get("command")
        return isinstance(command, str) and any(root + os.sep in command for root in roots)


def _safe_name(tool_use_id: str) -> str:
    # Tool-use ids come from the provider; keep them from naming a path outside the directory.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in tool_use_id).lstrip(".") or "result"
