"""`bash`: run a shell command in the working directory and report its output and exit code.

The command runs in its own process group (a new session) so that a timeout or a cancel kills
everything it started, not only the shell: `pytest` spawning workers or `sleep 100 | cat` must not
outlive the call. Output is read with a selector in this thread rather than `communicate()`, because
a background process (`server &`) can hold the pipe open forever after the shell itself has exited.
With a `Sandbox` (see `nova.tools.policy.sandbox`; a session has one by default where bubblewrap runs)
the shell runs inside bubblewrap instead, and what the command left at a protected path is undone after
it. Every command carries the tool runner's mark (nova.tools.policy.controls), so `nova` started inside it
refuses to change Nova's own controls.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.errors import ToolError
from nova.tools._common import BuiltinTool
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput
from nova.tools.policy.controls import TOOL_RUN_ENV, mark_name, tool_runner
from nova.tools.policy.sandbox import Sandbox, SandboxRun, sandbox_env

__all__ = ["BashTool"]

MAX_TIMEOUT_S = 600
MAX_CAPTURE_BYTES = 4 * 1024 * 1024
"""Kept in memory: the first and the last half. The spill layer handles what reaches history."""
EXIT_GRACE_S = 0.5
"""How long to keep reading after the shell exits before giving up on background processes."""
TERM_GRACE_S = 1.0
"""Between SIGTERM (let processes clean up) and SIGKILL (stop those that ignore it)."""
POLL_S = 0.05

# A pager or a credential prompt would wait forever on a terminal that is not there.
_NON_INTERACTIVE_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


class _Capture:
    """Output bytes with the middle dropped past the cap, so both the start (what ran) and the end
    (the error and summary) survive a command that prints gigabytes."""

    def __init__(self, limit: int = MAX_CAPTURE_BYTES) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.half
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.dropped and not self.tail:
            return head
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped} bytes of output dropped ...]\n{tail}"


@dataclass
class _Outcome:
    returncode: int | None = None
    stopped: str | None = None
    """`timeout` or `cancelled` when Nova killed the command."""
    detached: bool = False
    """The shell exited but something it started still held the output open."""


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(proc.pid, sig)


def _pump(proc: subprocess.Popen[bytes], capture: _Capture, timeout_s: float, ctx: ToolContext) -> _Outcome:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    outcome = _Outcome()
    deadline = time.monotonic() + timeout_s
    term_sent_at: float | None = None
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if outcome.stopped is None and (ctx.cancel.is_set() or now >= deadline):
                outcome.stopped = "cancelled" if ctx.cancel.is_set() else "timeout"
                _signal_group(proc, signal.SIGTERM)
                term_sent_at = now
            elif term_sent_at is not None and now - term_sent_at >= TERM_GRACE_S:
                _signal_group(proc, signal.SIGKILL)
                term_sent_at = None
            if selector.select(timeout=POLL_S):
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    chunk = None
                if chunk == b"":
                    break  # every process that had the pipe has closed it
                if chunk:
                    capture.add(chunk)
            if proc.poll() is not None:
                exited_at = exited_at or now
                if now - exited_at >= EXIT_GRACE_S:
                    outcome.detached = outcome.stopped is None
                    break
    if outcome.stopped is not None:
        # Whatever survived SIGTERM in the group goes now; the call is over.
        _signal_group(proc, signal.SIGKILL)
    outcome.returncode = proc.wait()
    return outcome


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"[killed by {name}; exit code {returncode}]"
    return f"[exit code: {returncode}]"


class BashTool(BuiltinTool):
    name = "bash"
    read_only = False
    description = (
        "Run a shell command with bash in the working directory and return its combined stdout and "
        "stderr followed by the exit code. Each call starts a fresh shell: `cd` and variables do not carry "
        "over to the next call (chain with `&&` instead). There is no terminal and no input: avoid "
        "interactive programs and editors. Commands are killed, with every process they started, after "
        "`timeout` seconds. For a long-running server run it in the background with its output redirected "
        "to a file, e.g. `server > server.log 2>&1 &`. Prefer read_file, grep and glob for reading and "
        "searching files."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "command": param("string", "The command line, run with `bash -c`."),
        "timeout": param("number", f"Seconds before the command is killed. Default 120, at most {MAX_TIMEOUT_S}.",
                         minimum=1, maximum=MAX_TIMEOUT_S),
    }, required=["command"])

    def __init__(self, *, sandbox: Sandbox | None = None, home: Path | None = None) -> None:
        """`home`: the Nova home the session works on; the commands carry its mark (nova.tools.policy.controls)
        so that `nova` refuses to change that home's controls from inside them."""
        self.sandbox = sandbox
        self.home = home
        if sandbox is not None:
            # The model should know why a write outside the workspace or a download fails.
            network = "the network is reachable" if sandbox.plan.network else "there is no network"
            self.description = (
                f"{BashTool.description} Commands run in a sandbox: only the project folder and a private "
                f"/tmp are writable, Nova's own files are read-only, {network}, and background processes "
                "end with the command."
            )

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command: str = args["command"]
        timeout_s = float(args.get("timeout", ctx.timeout_s))
        if not command.strip():
            raise ToolError("the command is empty.")
        if ctx.cancel.is_set():
            return ToolOutput(content="Cancelled before the command started.", is_error=True,
                              metadata={"exit_code": None, "cancelled": True})
        if not ctx.cwd.is_dir():
            raise ToolError(f"the working directory {ctx.cwd} does not exist.")
        shell = shutil.which("bash") or "/bin/sh"
        argv = [shell, "-c", command]
        env = {**os.environ, **_NON_INTERACTIVE_ENV, TOOL_RUN_ENV: mark_name(self.home)}
        run: SandboxRun | None = None
        if self.sandbox is not None:
            run = self.sandbox.prepare(argv, cwd=ctx.cwd)
            argv = run.argv
            env = sandbox_env(env)
        with tool_runner(self.home):
            proc = subprocess.Popen(
                argv,
                cwd=ctx.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,  # one pipe keeps stdout and stderr in the order they were written
                start_new_session=True,
                env=env,
            )
            capture = _Capture()
            started = time.monotonic()
            try:
                outcome = _pump(proc, capture, timeout_s, ctx)
            finally:
                if proc.poll() is None:  # an exception mid-read must not leave the command running
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait()
                assert proc.stdout is not None
                proc.stdout.close()
            duration = time.monotonic() - started
        # Every process of a sandboxed command has ended with it: what it left at a protected path stays put.
        undone = self.sandbox.undo_new(run) if self.sandbox is not None and run is not None else []

        output = capture.text().rstrip("\n")
        parts = [output if output else "(no output)"]
        returncode = outcome.returncode if outcome.returncode is not None else -1
        if outcome.stopped == "timeout":
            parts.append(
                f"[timed out after {timeout_s:g} s: the command and every process it started were killed. "
                "Pass a larger `timeout`, or run it in the background with output redirected to a file.]"
            )
        elif outcome.stopped == "cancelled":
            parts.append("[cancelled by the user: the command and every process it started were killed]")
        else:
            parts.append(_describe_exit(returncode))
        parts.extend(f"[{note}]" for note in undone)
        if outcome.detached:
            parts.append(
                "[background processes are still running and holding the output open; their further "
                "output is not captured. Redirect it to a file: `cmd > out.log 2>&1 &`]"
            )
        return ToolOutput(
            content="\n".join(parts),
            is_error=outcome.stopped is not None or returncode != 0,
            metadata={
                "exit_code": returncode,
                "timed_out": outcome.stopped == "timeout",
                "cancelled": outcome.stopped == "cancelled",
                "duration_s": round(duration, 3),
                "output_bytes_dropped": capture.dropped,
                **({"protected_paths_undone": len(undone)} if undone else {}),
            },
        )
