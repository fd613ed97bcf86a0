"""Nova's own controls answer only to a person: which `nova` commands change them, and how `nova` tells
that it was started by a command the model ran.

The controls are the permission rules and the rest of the config, a memory's review state (approve,
promote, edit, forget), the projects trusted to run code (`nova trust`), skill versions in use, the
session records, and the server (its token lets any client approve calls and memories). A model that
could run `nova config set permissions '{"allow": ["bash"]}'` through `bash` would write its own rules.
Three layers stop it, each explainable on its own:

1. **The sandbox** (on by default, nova.tools.policy.sandbox) hides `$NOVA_HOME`: inside it the config,
   the memory ledger, the session store and the server token cannot be read or written at all, and
   without the network the server cannot be reached.
2. **The permission policy** refuses a bash line that runs one of these `nova` commands (`nova config
   set`, `python -m nova memory approve`, behind any wrapper), or names a path in Nova's home, as it
   refuses a write to a protected file: whatever the rules, `--yes` or `--allow` say.
3. **`nova` itself** refuses them when it runs below a Nova tool (`require_person`): a Nova process that
   runs tools holds a marker while a process it started for a tool runs (`tool_runner`: a memory
   file named `nova-tool-runner`), and `nova` walks its own chain of parent processes looking for a
   process that holds it. A child cannot edit its parents, so clearing the environment (`env -i nova …`) or any variable
   does not help it. What this does not see: a process that detached itself (`setsid -f`, `nohup … &`
   after its shell ended) has no Nova ancestor left. Inside the sandbox every process ends with the
   command and the home is hidden; without the sandbox the policy refuses the forms it can read, and a
   program that edits the files directly is out of any parser's sight (which is why the sandbox is on
   by default).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from nova.errors import NovaError

__all__ = ["CONTROL_COMMANDS", "TOOL_RUNNER_MARK", "TOOL_RUN_ENV", "FromATool", "control_command", "mark_name",
           "mark_tool_runner", "require_person", "started_by_a_tool", "tool_runner", "unmark_tool_runner"]

TOOL_RUN_ENV = "NOVA_TOOL_RUN"
"""Set by the bash tool in every command's environment to the mark's name: a hint only (see above)."""

TOOL_RUNNER_MARK = "nova-tool-runner"
"""The name of the memory file a Nova process that runs tools keeps open (`/memfd:nova-tool-runner`)."""

CONTROL_COMMANDS: dict[str, frozenset[str] | None] = {
    "config": frozenset({"set", "unset"}),
    "memory": frozenset({"add", "edit", "approve", "forget", "promote", "consolidate", "undo"}),
    "skills": frozenset({"retire", "rollback", "restore"}),
    "sessions": frozenset({"rm"}),
    "trust": None,
    "serve": None,
}
"""`nova` commands that change Nova's controls (or, `serve`, hand out the token that does): for each
top-level command, the subcommands that do, or None for every use of it."""

_GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--provider", "--model", "--base-url"})


def control_command(argv: list[str]) -> str | None:
    """The control `argv` (a command's words, wrappers peeled) would change, as `nova config set`, or None.
    `nova …`, a path to it (`~/.local/bin/nova`) and `python -m nova …` / `python -m nova.cli.main …`
    all count."""
    if not argv:
        return None
    name = os.path.basename(argv[0])
    if name == "nova":
        rest = argv[1:]
    elif name.startswith(("python", "pypy")) and "-m" in argv:
        at = argv.index("-m")
        module = argv[at + 1] if at + 1 < len(argv) else ""
        if module != "nova" and not module.startswith("nova."):
            return None
        rest = argv[at + 2:]
    else:
        return None
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        i += 2 if rest[i] in _GLOBAL_OPTIONS_WITH_VALUE else 1
    if i >= len(rest):
        return None
    command = rest[i]
    if command not in CONTROL_COMMANDS:
        return None
    subcommands = CONTROL_COMMANDS[command]
    if subcommands is None:
        if command == "trust" and any(w in ("--list", "-l") for w in rest[i + 1:]):
            return None
        return f"nova {command}"
    sub = next((w for w in rest[i + 1:] if not w.startswith("-")), "")
    return f"nova {command} {sub}" if sub in subcommands else None


# -- the marker ---------------------------------------------------------------------------------------
def mark_name(home: Path | None) -> str:
    """The mark of a tool runner working on Nova home `home` (None: whichever home). The home is in the
    name (as a digest) so that a `nova` pointed at another home, as a project's own test suite does
    with a temporary one, is not refused: only Nova's own controls are the point."""
    if home is None:
        return TOOL_RUNNER_MARK
    digest = hashlib.sha256(os.fsencode(os.path.realpath(home.expanduser()))).hexdigest()[:16]
    return f"{TOOL_RUNNER_MARK}:{digest}"


class _Marks:
    """The tool runner's marks, each held while at least one process a tool started for that home may
    still be running: a memory file named `mark_name(home)`, opened close-on-exec (a child neither
    inherits it nor can pass for a runner itself). Held only then, so a `nova` this process starts for
    its own reasons (a test starting `nova serve`) is not taken for one a tool started; a process that
    outlives its tool call has lost its Nova ancestor anyway (its parent shell has ended)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[str, int] = {}
        self._fds: dict[str, int] = {}

    def acquire(self, name: str) -> None:
        with self._lock:
            self._holders[name] = self._holders.get(name, 0) + 1
            if name not in self._fds and hasattr(os, "memfd_create"):
                with contextlib.suppress(OSError):
                    self._fds[name] = os.memfd_create(name, os.MFD_CLOEXEC)

    def release(self, name: str) -> None:
        with self._lock:
            left = self._holders.get(name, 0) - 1
            if left > 0:
                self._holders[name] = left
                return
            self._holders.pop(name, None)
            fd = self._fds.pop(name, None)
            if fd is not None:
                os.close(fd)


_MARKS = _Marks()


def mark_tool_runner(home: Path | None = None) -> None:
    """This process is about to start a process for a tool (a bash command, an MCP server) working on
    Nova home `home`: hold the mark until the matching `unmark_tool_runner`. Where memory files are not
    available the environment mark `NOVA_TOOL_RUN` is all there is."""
    _MARKS.acquire(mark_name(home))


def unmark_tool_runner(home: Path | None = None) -> None:
    _MARKS.release(mark_name(home))


@contextlib.contextmanager
def tool_runner(home: Path | None = None) -> Iterator[None]:
    """Held around one tool process's life."""
    mark_tool_runner(home)
    try:
        yield
    finally:
        unmark_tool_runner(home)


def _parent(pid: int) -> int:
    """The parent of `pid` from /proc (0 when it cannot be read). The command name in the stat line is
    in parentheses and may hold anything, so the fields are read after the last `)`."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else 0


def _holds_mark(pid: int, names: tuple[str, ...]) -> bool:
    targets = tuple(f"/memfd:{name} " for name in names)
    try:
        entries = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for entry in entries:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{entry}") + " "
        except OSError:
            continue
        if link.startswith(targets):
            return True
    return False


MAX_ANCESTORS = 256


def started_by_a_tool(home: Path | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """How this process descends from a command a Nova tool ran for Nova home `home`, or None: an
    ancestor holding the tool runner's mark, or the environment's mark. The environment can only add a
    refusal, never take one away: a child that clears it still has its ancestors."""
    names = (TOOL_RUNNER_MARK,) if home is None else (TOOL_RUNNER_MARK, mark_name(home))
    pid = os.getppid()
    for _ in range(MAX_ANCESTORS):
        if pid <= 1:
            break
        if _holds_mark(pid, names):
            return f"a Nova process (pid {pid}) that runs tools"
        pid = _parent(pid)
    env = os.environ if environ is None else environ
    if env.get(TOOL_RUN_ENV) in names:
        return f"a command a Nova tool ran ({TOOL_RUN_ENV} is set)"
    return None


class FromATool(NovaError):
    """A control command was started by a command the model ran."""


def require_person(action: str, home: Path | None = None) -> None:
    """Raise `FromATool` when `action` (e.g. `nova config set`), acting on Nova home `home`, was started
    below a Nova tool working on that home."""
    who = started_by_a_tool(home)
    if who is not None:
        raise FromATool(f"`{action}` changes Nova's own controls and answers only to a person; it was started "
                        f"by {who}. Run it yourself in a terminal outside Nova.")
