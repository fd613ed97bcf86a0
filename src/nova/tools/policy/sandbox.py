"""The bubblewrap sandbox the commands the model runs go into (`bash`, stdio MCP servers), on by default.

The permission rules and the shell parser decide whether a command may run; they read the command line
and cannot see what a program does once it starts (a script, a Makefile, `python -c`). The sandbox
bounds that: inside it the workspace is writable and everything else read-only, Nova's own files are
read-only, secret folders (`~/.ssh`, cloud credentials, `$NOVA_HOME` with its config, token, memory
ledger and session store) and the sockets of local services (`/run`: the session bus, agent sockets,
database sockets) are hidden behind empty read-only mounts, `/tmp` is private, there is no network
unless allowed, no capabilities, and every process dies with the command (its own PID namespace) and
with Nova (`--die-with-parent`).

Nova's files inside the writable workspace need three more things, because a read-only mount guards a
path, not a name:
- the folders above each read-only file or folder are mounted onto themselves, so no command can move
  one aside (`mv src x`) and put a file of its own where the protected one was;
- what is protected is looked up again before each command (`Sandbox.prepare`), so a `.mcp.json` or
  instruction file that appeared since the session started is read-only too;
- a protected path that does not exist when the command starts (an instruction file where none is, a
  `.mcp.json`, `.git/hooks`) cannot be kept from being created, so it is watched: whatever the command
  made there is moved to `$NOVA_HOME/quarantine/` when it ends (`Sandbox.undo_new`), and the model is
  told. Every process of the command has ended by then (its PID namespace is gone), so nothing can put
  it back.

Three steps, so the part that decides the mounts is testable without running anything:
`plan_sandbox` looks at the filesystem once per session and returns a `SandboxPlan` (plain paths);
`bwrap_argv` turns a plan and a command into bubblewrap's argument list (pure); `require_bubblewrap`
checks once that bubblewrap exists and can create namespaces here, and refuses clearly when not
(`bubblewrap_problem` says why without raising, for the default mode that falls back).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nova.errors import ConfigError
from nova.tools.policy.git_exec import config_text_runs_program

__all__ = [
    "SECRET_HOME_PATHS",
    "Sandbox",
    "SandboxPlan",
    "SandboxRun",
    "bubblewrap_problem",
    "bwrap_argv",
    "plan_sandbox",
    "require_bubblewrap",
    "sandbox_env",
]

SECRET_HOME_PATHS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".kube", ".docker",
    ".password-store", ".netrc", ".git-credentials", ".pypirc",
)
"""Under the user's home: keys and credentials no command in a workspace needs to read."""

AGENT_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock")
"""Sockets a read-only filesystem does not stop a process from connecting to, each a way out (a
container started through the Docker socket can mount anything)."""

SERVICE_SOCKET_DIRS = ("/run", "/var/run")
"""Where local services keep their sockets (the session and system bus, ssh-agent, PostgreSQL, Docker):
a connection to one acts outside the sandbox, and a read-only mount does not stop a connection."""

RESOLVER_DIRS = ("/run/systemd/resolve", "/run/resolvconf")
"""What `/etc/resolv.conf` may point into: put back when the network is allowed, so names resolve."""

_SECRET_ENV_WORDS = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL",
                               "CREDENTIALS", "AUTH"})
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", "target", "dist", "build"})
MAX_SCANNED_DIRS = 20_000
"""Bound on the walk that finds nested instruction files, so a huge tree cannot stall the start."""

UNAVAILABLE = "sandbox requested but bubblewrap is not available"
FIX = "install the bubblewrap package or set sandbox: false"


@dataclass(frozen=True, kw_only=True)
class SandboxPlan:
    """What a sandboxed command sees. Every path is absolute and symlink-resolved; `hidden_dirs`,
    `hidden_files`, `read_only` and `pinned` hold only paths that exist (a mount point that does not
    exist would have to be created, and inside the workspace that means a stray file in the user's tree)."""

    cwd: Path
    writable: tuple[Path, ...]
    read_only: tuple[Path, ...] = ()
    pinned: tuple[Path, ...] = ()
    """Writable folders mounted onto themselves: a mount point cannot be renamed or removed, so the
    read-only paths below them stay where Nova looks for them."""
    hidden_dirs: tuple[Path, ...] = ()
    hidden_files: tuple[Path, ...] = ()
    shown_dirs: tuple[Path, ...] = ()
    """Folders inside a hidden one mounted back read-only (the resolver's, when the network is on)."""
    network: bool = False
    watched: tuple[Path, ...] = ()
    """Protected paths (existing or not) looked up again before each command: the ones that exist are
    read-only for it, the ones that do not are undone after it (`Sandbox.undo_new`)."""


@dataclass(frozen=True, slots=True)
class SandboxRun:
    """One command prepared to run: its bubblewrap command line and the watched paths that did not
    exist when it was prepared."""

    argv: list[str]
    absent: tuple[Path, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Sandbox:
    """A plan and the bubblewrap that carries it out: what `bash` and the MCP servers hold when sandboxed."""

    plan: SandboxPlan
    bwrap: str
    quarantine: Path | None = None
    """Where `undo_new` moves what a command created at a protected path (inside Nova's home, which no
    sandboxed command can see); None: such paths are deleted."""

    def wrap(self, command: Sequence[str], *, cwd: Path) -> list[str]:
        return self.prepare(command, cwd=cwd).argv

    def prepare(self, command: Sequence[str], *, cwd: Path) -> SandboxRun:
        """`command` under this plan, with the watched paths looked up now: those that exist are added
        read-only (and their folders pinned); those that do not are returned, to be checked afterwards."""
        existing: list[Path] = []
        absent: list[Path] = []
        for path in self.plan.watched:
            (existing if os.path.lexists(path) else absent).append(path)
        plan = replace(self.plan, cwd=_real(cwd))
        if existing:
            plan = _with_read_only(plan, (_real(p) for p in existing))
        return SandboxRun(bwrap_argv(plan, command, bwrap=self.bwrap), tuple(absent))

    def undo_new(self, run: SandboxRun) -> list[str]:
        """After the command: whatever it created at a watched path that was absent is moved to the
        quarantine (or deleted without one). One sentence per path, for the tool result."""
        notes: list[str] = []
        batch = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
        for path in run.absent:
            for planted, why in _planted(path):
                where = self._set_aside(planted, batch)
                notes.append(f"{planted} {why}; what the command put there was "
                             f"{'moved to ' + str(where) if where else 'deleted'}.")
        return notes

    def _set_aside(self, path: Path, batch: str) -> Path | None:
        if self.quarantine is None:
            _remove(path)
            return None
        root = next((w for w in self.plan.writable if path != w and w in path.parents), None)
        relative = path.relative_to(root) if root is not None else path.relative_to(path.anchor)
        target = self.quarantine / batch / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), str(target))
        except OSError:
            _remove(path)
            return None
        return target


def _planted(path: Path) -> list[tuple[Path, str]]:
    """What a command left at a watched path that was absent, with why it cannot stay. A repository the
    command made itself (`git init`) keeps its config and git's sample hooks, but not a hook that would
    run or a config key git runs as a program."""
    if not os.path.lexists(path):
        return []
    protected = "did not exist before this command and is one of Nova's protected files"
    if path.parent.name == ".git" and path.name == "hooks" and path.is_dir() and not path.is_symlink():
        return [(hook, "is a git hook made by this command (git would run it outside the sandbox)")
                for hook in sorted(path.iterdir()) if not hook.name.endswith(".sample")]
    if path.parent.name == ".git" and path.name == "config" and path.is_file() and not path.is_symlink():
        try:
            key = config_text_runs_program(path.read_text(encoding="utf-8", errors="replace")[:1_000_000])
        except OSError:
            key = "an unreadable file"
        if key is None:
            return []
        return [(path, f"was made by this command with `{key}`, which git would run as a program outside "
                       "the sandbox")]
    return [(path, protected)]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def tools_under_tmp(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Folders under /tmp that commands need to run, shown again read-only over the private /tmp: the
    Python Nova runs on and what it imports (a virtualenv or a checkout made in /tmp) and the PATH
    entries there. Without them a command that runs `python` or a tool installed there is not found."""
    environ = os.environ if environ is None else environ
    tmp = Path("/tmp")
    candidates = [sys.prefix, sys.base_prefix, *sys.path, *environ.get("PATH", "").split(os.pathsep)]
    found: set[Path] = set()
    for entry in candidates:
        if not entry:
            continue
        try:
            resolved = Path(entry).resolve()
        except OSError:
            continue
        if tmp in resolved.parents and resolved.is_dir():
            found.add(resolved)
    # A folder inside another one already shown needs no mount of its own.
    return sorted(p for p in found if not any(q in p.parents for q in found))


def bwrap_argv(plan: SandboxPlan, command: Sequence[str], *, bwrap: str = "bwrap") -> list[str]:
    """The bubblewrap command line that runs `command` under `plan`. Mount order matters (a later mount
    covers an earlier one): the read-only root, fresh /dev, /proc and a private /tmp, then the writable
    workspace, the pinned folders in it, Nova's files read-only inside them, then the hidden paths over
    everything (and the few folders shown again inside a hidden one)."""
    argv = [bwrap, "--die-with-parent", "--unshare-all"]
    if plan.network:
        argv.append("--share-net")
    # Run as root, bubblewrap keeps every capability: one `umount` would then uncover a hidden folder.
    argv += ["--cap-drop", "ALL"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in tools_under_tmp():
        argv += ["--ro-bind", str(path), str(path)]
    for path in plan.writable:
        argv += ["--bind", str(path), str(path)]
    for path in plan.pinned:
        argv += ["--bind", str(path), str(path)]
    for path in plan.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for path in plan.hidden_dirs:
        argv += ["--tmpfs", str(path)]
    # Shown again before the hiding folders turn read-only: their mount points are made in the tmpfs.
    for path in plan.shown_dirs:
        argv += ["--ro-bind", str(path), str(path)]
    for path in plan.hidden_dirs:
        argv += ["--remount-ro", str(path)]
    for path in plan.hidden_files:
        argv += ["--ro-bind", "/dev/null", str(path)]
    # Caches that honour XDG (and npm's) go to the private /tmp: the user's own are read-only in here.
    argv += ["--setenv", "XDG_CACHE_HOME", "/tmp/.cache", "--setenv", "npm_config_cache", "/tmp/.npm"]
    argv += ["--chdir", str(plan.cwd), "--", *command]
    return argv


def sandbox_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without what looks like a credential (`ANTHROPIC_API_KEY`, `GITHUB_TOKEN`,
    `AWS_SECRET_ACCESS_KEY`, `SSH_AUTH_SOCK`, a database URL with a password in it...): a command has no
    business reading Nova's API key, and output that quotes it would land in the transcript and the
    next request."""
    return {name: value for name, value in environ.items()
            if not _SECRET_ENV_WORDS.intersection(re.split(r"[_\W]+", name.upper()))
            and not _URL_WITH_PASSWORD.match(value)}


def plan_sandbox(
    *,
    workspace: Path,
    cwd: Path,
    user_home: Path,
    nova_home: Path,
    protected_dirs: Iterable[Path] = (),
    protected_files: Iterable[Path] = (),
    protected_names: Iterable[str] = (),
    watched: Iterable[Path] = (),
    network: bool = False,
) -> SandboxPlan:
    """The plan for one session. `workspace` (the project root) is writable. Nova's protected folders
    and files, instruction files by name anywhere in the workspace, and `.git/config` and `.git/hooks`
    (either would let a command plant code that git runs later, outside the sandbox) are read-only, and
    the folders above them pinned. `watched` are the protected paths looked up again before every
    command (`.mcp.json`, the places instruction files are read from, skill folders): `.git/config` and
    `.git/hooks` are always among them. Secret folders in `user_home`, `nova_home` (config, sessions,
    server token), agent sockets and the service sockets under `/run` are hidden — except one that holds
    the workspace itself, which would hide the workspace too."""
    root = _real(workspace)
    work = _real(cwd)
    writable = (root,) if _within(work, root) else (root, work)

    read_only: list[Path] = [_real(p) for p in (*protected_dirs, *protected_files)]
    git = [root / ".git" / "config", root / ".git" / "hooks"]
    read_only += git
    names = frozenset(protected_names)
    if names:
        read_only += _find_named(root, names)
    hidden = [_real(user_home / rel) for rel in SECRET_HOME_PATHS]
    # The user's runtime folder holds the session bus, ssh-agent and gpg-agent sockets: each would let
    # a command act outside the sandbox (`systemd-run --user`, signing, pushing with the user's key).
    hidden += [_real(nova_home), Path(f"/run/user/{os.getuid()}"), *(Path(s) for s in AGENT_SOCKETS)]
    hidden += [_real(Path(p)) for p in SERVICE_SOCKET_DIRS]

    def keep(path: Path) -> bool:
        # Inside a writable folder only: elsewhere the read-only root already protects it.
        return path.exists() and any(_within(path, w) for w in writable)

    hidden_kept = [p for p in dict.fromkeys(hidden)
                   if p.exists() and not any(_within(w, p) for w in writable)]
    # Inside a hidden folder a second hiding mount is not needed (and its mount point may not exist).
    hidden_kept = [p for p in hidden_kept if not any(h != p and _within(p, h) for h in hidden_kept)]
    shown = [Path(p) for p in RESOLVER_DIRS if network and Path(p).is_dir()
             and any(_within(Path(p), h) for h in hidden_kept)]
    watched_all = tuple(dict.fromkeys(_lexical(p) for p in (*watched, *git)
                                      if any(_within(_lexical(p), w) for w in writable)))
    plan = SandboxPlan(
        cwd=work,
        writable=writable,
        hidden_dirs=tuple(p for p in hidden_kept if p.is_dir()),
        hidden_files=tuple(p for p in hidden_kept if not p.is_dir()),
        shown_dirs=tuple(shown),
        network=network,
        watched=watched_all,
    )
    return _with_read_only(plan, (p for p in read_only if keep(p)))


def _with_read_only(plan: SandboxPlan, more: Iterable[Path]) -> SandboxPlan:
    """`plan` with `more` read-only (those inside a writable folder and not already under a read-only
    folder) and every folder between a writable root and a read-only path pinned."""
    paths = sorted({*plan.read_only, *(p for p in more if any(_within(p, w) for w in plan.writable))},
                   key=lambda p: (len(p.parts), str(p)))
    read_only: list[Path] = []
    for path in paths:
        if not any(_within(path, r) and r.is_dir() for r in read_only):
            read_only.append(path)
    pinned: set[Path] = set(plan.pinned)
    for path in read_only:
        root = max((w for w in plan.writable if _within(path, w)), key=lambda w: len(w.parts))
        folder = path.parent
        while folder != root and _within(folder, root):
            pinned.add(folder)
            folder = folder.parent
    pinned_ordered = tuple(sorted((p for p in pinned if not any(_within(p, r) for r in read_only)),
                                  key=lambda p: (len(p.parts), str(p))))
    return replace(plan, read_only=tuple(read_only), pinned=pinned_ordered)


def require_bubblewrap() -> str:
    """The path of a bubblewrap that works here, or `ConfigError` saying why not and what to do: the
    sandbox was asked for, so running unsandboxed instead is never an option."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise ConfigError(f"{UNAVAILABLE}: no `bwrap` on PATH. To fix: {FIX}")
    problem = _probe(bwrap)
    if problem:
        raise ConfigError(f"{UNAVAILABLE}: {bwrap} cannot create a sandbox here ({problem}). To fix: {FIX}")
    return bwrap


def bubblewrap_problem() -> str | None:
    """Why no sandbox can run here (bubblewrap missing, or unable to create namespaces), or None."""
    try:
        require_bubblewrap()
    except ConfigError as exc:
        return str(exc).removeprefix(f"{UNAVAILABLE}: ").split(". To fix:")[0]
    return None


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> str | None:
    """None when `bwrap` can create every namespace the sandbox uses (user namespaces may be disabled,
    or forbidden inside a container); else its complaint. Remembered per path for the process."""
    plan = SandboxPlan(cwd=Path("/"), writable=())
    try:
        done = subprocess.run(bwrap_argv(plan, ["true"], bwrap=bwrap), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {done.returncode}"
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def _lexical(path: Path) -> Path:
    """The path with its folder symlink-resolved but not its last part: a watched name may not exist,
    or be a link a command planted, and it is the link itself that is set aside."""
    path = path.expanduser()
    return Path(os.path.realpath(path.parent)) / path.name


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _find_named(root: Path, names: frozenset[str]) -> list[Path]:
    """Files named like an instruction file anywhere under `root`, skipping dependency, build and VCS
    folders, and stopping after `MAX_SCANNED_DIRS` folders."""
    found: list[Path] = []
    pending = [root]
    scanned = 0
    while pending and scanned < MAX_SCANNED_DIRS:
        folder = pending.pop()
        scanned += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIP_DIRS:
                    pending.append(Path(entry.path))
            elif entry.name in names and entry.is_file():  # a link's target is what a write changes
                found.append(_real(Path(entry.path)))
    return found
