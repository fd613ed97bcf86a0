"""What the built-in tools share: argument checking, path resolution, binary detection, atomic writes."""

from __future__ import annotations

import os
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.errors import ToolError
from nova.tools._schema import ArgumentError, validate_arguments
from nova.tools.base import ToolContext, ToolOutput

__all__ = [
    "BuiltinTool",
    "WorkLimit",
    "atomic_write_text",
    "display_path",
    "error",
    "looks_binary",
    "resolve_path",
]

BINARY_SNIFF_BYTES = 8192


def error(message: str, **metadata: Any) -> ToolOutput:
    return ToolOutput(content=f"Error: {message}", is_error=True, metadata=metadata)


class BuiltinTool(ABC):
    """A tool whose `run` never raises for a bad call: arguments are checked against `input_schema`
    first, and `ToolError` or an OS error from the work itself becomes an error result the model reads."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            args = validate_arguments(self.name, self.input_schema, input)
        except ArgumentError as exc:
            return error(str(exc))
        if ctx.cancel.is_set():
            return error(f"{self.name} was cancelled by the user before it started.", cancelled=True)
        try:
            return self._run(args, ctx)
        except ToolError as exc:
            return error(str(exc))
        except OSError as exc:
            # Permission problems, full disks, races with other processes: the model can react to these.
            where = f" ({exc.filename})" if exc.filename else ""
            return error(f"{self.name} failed: {exc.strerror or exc}{where}")

    @abstractmethod
    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


class WorkLimit:
    """When long work inside a tool must stop: the user cancelled, or the call's time (`ctx.timeout_s`)
    is up. Checked between units of work (a file, a block of lines), so a call ends promptly."""

    __slots__ = ("_ctx", "_deadline", "stopped")

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._deadline = time.monotonic() + ctx.timeout_s
        self.stopped: str | None = None
        """`cancelled` or `timeout` once `reached()` has said so."""

    def reached(self) -> bool:
        if self.stopped is None:
            if self._ctx.cancel.is_set():
                self.stopped = "cancelled"
            elif time.monotonic() >= self._deadline:
                self.stopped = "timeout"
        return self.stopped is not None

    def note(self, what: str) -> str | None:
        """A line for the result saying `what` is partial and why, or None when the work ran to the end."""
        if self.stopped == "cancelled":
            return f"[{what} cancelled by the user; results are partial]"
        if self.stopped == "timeout":
            return f"[{what} stopped after {self._ctx.timeout_s:g} s; results are partial]"
        return None


def resolve_path(ctx: ToolContext, raw: str) -> Path:
    """`raw` as an absolute path: relative paths are taken from the session's working directory, not
    the process's, and `~` is expanded. Symlinks are kept so messages show the path the model used."""
    if not raw.strip():
        raise ToolError("the path is empty")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = ctx.cwd / path
    return Path(os.path.normpath(path))


def display_path(ctx: ToolContext, path: Path) -> str:
    """Relative to the working directory when inside it (shorter, and what the model usually wrote)."""
    try:
        return str(path.relative_to(ctx.cwd)) or "."
    except ValueError:
        return str(path)


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block is how git and grep tell binary from text; it is cheap and rarely
    wrong for source trees, where a text file never contains NUL."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def _current_umask() -> int:
    """The process umask. Linux reports it in /proc; elsewhere os.umask must be set to read it, which
    briefly changes it for every thread, so that is only the fallback."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def atomic_write_text(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and rename it into place, so a crash or a
    concurrent reader never sees half a file. An existing file's permission bits are kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # newline="" writes the text exactly as given: CRLF files stay CRLF, LF files stay LF.
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp_name, mode)
        else:
            # mkstemp creates 0600; a new file should get the usual umask-derived mode instead.
            os.chmod(tmp_name, 0o666 & ~_current_umask())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
