"""An optional bubblewrap sandbox for the `bash` tool (Linux, `sandbox: true` in the config).

The permission rules and the shell parser decide whether a command may run; they read the command line
and cannot see what a program does once it starts (a script, a Makefile, `python -c`). The sandbox
bounds that: inside it the workspace is writable and everything else read-only, Nova's own files are
read-only, secret folders (`~/.ssh`, cloud credentials, `$NOVA_HOME`) are hidden behind empty read-only
mounts, `/tmp` is private, there is no network unless allowed, no capabilities, and every process dies
with the command (its own PID namespace) and with Nova (`--die-with-parent`).

Three steps, so the part that decides the mounts is testable without running anything:
`plan_sandbox` looks at the filesystem once per session and returns a `SandboxPlan` (plain paths);
`bwrap_argv` turns a plan and a command into bubblewrap's argument list (pure); `require_bubblewrap`
checks once that bubblewrap exists and can create namespaces here, and refuses clearly when not.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nova.errors import ConfigError

__all__ = [
    "SECRET_HOME_PATHS",
    "Sandbox",
    "SandboxPlan",
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

_SECRET_ENV_WORDS = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL",
                               "CREDENTIALS", "AUTH"})
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", "target", "dist", "build"})
MAX_SCANNED_DIRS = 20_000
"""Bound on the walk that finds nested instruction files, so a huge tree cannot stall the start."""

UNAVAILABLE = "sandbox requested but bubblewrap is not available"
FIX = "install the bubblewrap package or set sandbox: false"


@dataclass(frozen=True, kw_only=True)
class SandboxPlan:
    """What a sandboxed command sees. Every path is absolute and symlink-resolved; `hidden_dirs`,
    `hidden_files` and `read_only` hold only paths that exist (a mount point that does not exist would
    have to be created, and inside the workspace that means a stray file in the user's tree)."""

    cwd: Path
    writable: tuple[Path, ...]
    read_only: tuple[Path, ...] = ()
    hidden_dirs: tuple[Path, ...] = ()
    hidden_files: tuple[Path, ...] = ()
    network: bool = False


@dataclass(frozen=True, kw_only=True)
class Sandbox:
    """A plan and the bubblewrap that carries it out: what the `bash` tool holds when sandboxed."""

    plan: SandboxPlan
    bwrap: str

    def wrap(self, command: Sequence[str], *, cwd: Path) -> list[str]:
        return bwrap_argv(replace(self.plan, cwd=_real(cwd)), command, bwrap=self.bwrap)


def bwrap_argv(plan: SandboxPlan, command: Sequence[str], *, bwrap: str = "bwrap") -> list[str]:
    """The bubblewrap command line that runs `command` under `plan`. Mount order matters (a later mount
    covers an earlier one): the read-only root, fresh /dev, /proc and a private /tmp, then the writable
    workspace, then Nova's files read-only inside it, then the hidden paths over everything."""
    argv = [bwrap, "--die-with-parent", "--unshare-all"]
    if plan.network:
        argv.append("--share-net")
    # Run as root, bubblewrap keeps every capability: one `umount` would then uncover a hidden folder.
    argv += ["--cap-drop", "ALL"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in plan.writable:
        argv += ["--bind", str(path), str(path)]
    for path in plan.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for path in plan.hidden_dirs:
        argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in plan.hidden_files:
        argv += ["--ro-bind", "/dev/null", str(path)]
    # Caches that honour XDG go to the private /tmp: the user's own cache folder is read-only in here.
    argv += ["--setenv", "XDG_CACHE_HOME", "/tmp/.cache", "--chdir", str(plan.cwd), "--", *command]
    return argv


def sandbox_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without what looks like a credential (`ANTHROPIC_API_KEY`, `GITHUB_TOKEN`,
    `AWS_SECRET_ACCESS_KEY`, `SSH_AUTH_SOCK`...): a command has no business reading Nova's API key, and
    output that quotes it would land in the transcript and the next request."""
    return {name: value for name, value in environ.items()
            if not _SECRET_ENV_WORDS.intersection(re.split(r"[_\W]+", name.upper()))}


def plan_sandbox(
    *,
    workspace: Path,
    cwd: Path,
    user_home: Path,
    nova_home: Path,
    protected_dirs: Iterable[Path] = (),
    protected_files: Iterable[Path] = (),
    protected_names: Iterable[str] = (),
    network: bool = False,
) -> SandboxPlan:
    """The plan for one session. `workspace` (the project root) is writable. Nova's protected folders
    and files, instruction files by name anywhere in the workspace, and `.git/config` and `.git/hooks`
    (either would let a command plant code that git runs later, outside the sandbox) are read-only.
    Secret folders in `user_home`, `nova_home` (config, sessions, server token) and agent sockets are
    hidden — except one that holds the workspace itself, which would hide the workspace too."""
    root = _real(workspace)
    work = _real(cwd)
    writable = (root,) if _within(work, root) else (root, work)

    read_only: list[Path] = [_real(p) for p in (*protected_dirs, *protected_files)]
    read_only += [root / ".git" / "config", root / ".git" / "hooks"]
    names = frozenset(protected_names)
    if names:
        read_only += _find_named(root, names)
    hidden = [_real(user_home / rel) for rel in SECRET_HOME_PATHS]
    # The user's runtime folder holds the session bus, ssh-agent and gpg-agent sockets: each would let
    # a command act outside the sandbox (`systemd-run --user`, signing, pushing with the user's key).
    hidden += [_real(nova_home), Path(f"/run/user/{os.getuid()}"), *(Path(s) for s in AGENT_SOCKETS)]

    def keep(path: Path) -> bool:
        # Inside a writable folder only: elsewhere the read-only root already protects it.
        return path.exists() and any(_within(path, w) for w in writable)

    hidden_kept = [p for p in dict.fromkeys(hidden)
                   if p.exists() and not any(_within(w, p) for w in writable)]
    return SandboxPlan(
        cwd=work,
        writable=writable,
        read_only=tuple(sorted({p for p in read_only if keep(p)}, key=lambda p: len(p.parts))),
        hidden_dirs=tuple(p for p in hidden_kept if p.is_dir()),
        hidden_files=tuple(p for p in hidden_kept if not p.is_dir()),
        network=network,
    )


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
