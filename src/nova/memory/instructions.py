"""Instruction files (SPEC INS-1..3): the always-on rules loaded into every turn.

Discovery order, lowest priority first (later files are read later, so they can refine earlier ones):

1. the user's global file, `<home>/NOVA.md` (`home` is `Settings.home`, normally `~/.nova`);
2. at every directory level from the git root down to the working directory: each name in
   `project_files` (default `NOVA.md`, `AGENTS.md`, `CLAUDE.md`, so existing projects work unchanged);
3. the local override `NOVA.local.md` in the working directory (meant to stay out of version control).

Imports: a token `@path` at the start of a line or after whitespace expands that file right after the
one that imported it. The path is relative to the importing file; `~/` and absolute paths work. To keep
prose like `@pytest.fixture` or `@someone` from being read as an import, the path must start with `./`,
`../`, `~/` or `/`, contain a `/`, or end in `.md`, `.markdown`, `.mdx`, `.txt` or `.rst`. Imports inside
fenced code blocks and inline code spans are ignored. Root files are depth 0; imports go at most
`max_import_depth` (5) levels deep: a depth-5 file loads, its own imports are reported as skipped. Every
file is loaded once, by resolved absolute path, which also breaks import cycles. A missing, unreadable
or binary import is a warning in the report, never a failure.

Safety: instruction files come from the repository, so they are untrusted input. An import must resolve
(symlinks followed) to a file under the project root (the git root) or Nova's home; `@~/.ssh/id_rsa`,
`@/etc/passwd` and `@../../outside.md` are refused. Under Nova's home only rule files may be imported
(`.md`, `.txt` … outside its state folders): the server token, `config.json`, the session store and
transcripts, logs, skills and every memory file (the home's and the project's `.nova/memory/`, which
reach the model only through review and recall) never are. Every file, root or import, must be a
regular file (checked with `stat` before it is opened, then opened through `nova.fs` without blocking,
so a FIFO is never opened and `/dev/zero` never read), at most `max_file_bytes`, and all of them
together at most `max_total_bytes`. A file that looks like a private key or credentials is refused even
inside the project, and what an import adds passes the secret scan of `nova.memory.secrets`: each
secret found is replaced by `[REDACTED <kind>]` (the file's `redacted` names the kinds). Each refusal
is one skip line naming the file, the `@target` as written, the importer and why.

Budget: the whole set must fit in `token_budget` tokens. Files are admitted in discovery order; one that
does not fit is skipped whole (with everything it imported) and named in the report — nothing is cut.

Configuration (`instructions` section of config.json): `project_files`, `local_file`, `user_file`,
`max_import_depth`, `token_budget`, `max_file_bytes`, `max_total_bytes`.
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from nova.errors import ConfigError, FileRefused
from nova.fs.safe_read import read_bytes
from nova.fs.secret_paths import secret_path_kind, secret_text_kind
from nova.fs.special_files import NotRegularFile, special_kind
from nova.memory.paths import find_git_root, home_memory_dir, project_memory_dir, project_root
from nova.memory.secrets import find_secrets, redact
from nova.settings import config_int, config_str, config_str_list

__all__ = [
    "InstructionsConfig",
    "LoadedFile",
    "RuleSet",
    "SkippedFile",
    "discover_instruction_files",
    "estimate_tokens",
    "find_imports",
    "instruction_search_places",
    "load_rules",
    "parse_instructions_config",
]

Kind = Literal["user", "project", "local", "import"]
TokenEstimator = Callable[[str], int]

_DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", ".rst")
_IMPORT = re.compile(r"(?:(?<=\s)|^)@(\S+)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TRAILING_PUNCTUATION = ".,;:!?)]}\"'"
_BINARY_SNIFF = 8192


@dataclass(frozen=True, slots=True, kw_only=True)
class InstructionsConfig:
    project_files: tuple[str, ...] = ("NOVA.md", "AGENTS.md", "CLAUDE.md")
    local_file: str = "NOVA.local.md"
    user_file: str = "NOVA.md"
    max_import_depth: int = 5
    token_budget: int = 20_000
    # Far above any sane rules file (the token budget trims the prompt anyway); they bound what is read.
    max_file_bytes: int = 256 * 1024
    max_total_bytes: int = 1024 * 1024


def parse_instructions_config(raw: Mapping[str, Any], *, source: str = "config [instructions]") -> InstructionsConfig:
    values: dict[str, Any] = {}
    if "project_files" in raw:
        values["project_files"] = config_str_list(raw["project_files"], source=source, key="project_files")
    for key in ("local_file", "user_file"):
        if key in raw:
            values[key] = config_str(raw[key], source=source, key=key)
    for key in ("max_import_depth", "token_budget", "max_file_bytes", "max_total_bytes"):
        if key in raw:
            values[key] = config_int(raw[key], source=source, key=key)
            if values[key] < 0:
                raise ConfigError(f"{source}: key {key!r} must not be negative, got {raw[key]!r}")
    return replace(InstructionsConfig(), **values)


def estimate_tokens(text: str) -> int:
    """`nova.tokens`' script-aware estimate when that package is importable, else about four characters
    per token. Imported lazily so this loader works (and is testable) without the token package."""
    counter = _default_counter()
    return counter(text) if counter is not None else math.ceil(len(text) / 4)


@functools.cache
def _default_counter() -> TokenEstimator | None:
    try:
        tokens: Any = importlib.import_module("nova.tokens")
        counter = tokens.HeuristicCounter()
    except (ImportError, AttributeError, TypeError):
        return None
    count: TokenEstimator = counter.count
    return count


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedFile:
    path: Path
    kind: Kind
    imported_by: Path | None
    depth: int
    tokens: int
    text: str
    redacted: tuple[str, ...] = ()
    """The kinds of secret replaced by `[REDACTED <kind>]` in an imported file's text."""

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"path": str(self.path),
                                 "imported_by": str(self.imported_by) if self.imported_by else None,
                                 "tokens": self.tokens}
        if self.redacted:
            shown["redacted"] = list(self.redacted)
        return shown


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedFile:
    path: Path
    reason: str
    imported_by: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSet:
    """The resolved chain: the files that made it (in order), what was skipped and why, and the text."""

    files: tuple[LoadedFile, ...]
    skipped: tuple[SkippedFile, ...]
    token_budget: int
    text: str = field(default="")

    @property
    def tokens(self) -> int:
        return sum(f.tokens for f in self.files)

    def report(self) -> dict[str, Any]:
        """The `nova rules --json` shape."""
        return {"files": [f.to_dict() for f in self.files], "skipped": [s.to_dict() for s in self.skipped]}


# -- discovery -----------------------------------------------------------------------------------------
def _levels(cwd: Path) -> list[Path]:
    """Directories from the git root down to `cwd` (just `cwd` outside a repository)."""
    cwd = cwd.resolve()
    root = find_git_root(cwd)
    if root is None:
        return [cwd]
    chain = [cwd]
    while chain[-1] != root:
        chain.append(chain[-1].parent)
    return list(reversed(chain))


def discover_instruction_files(*, cwd: Path, home: Path, config: InstructionsConfig) -> list[tuple[Path, Kind]]:
    """The root files that exist, in load order."""
    found: list[tuple[Path, Kind]] = []
    user = home / config.user_file
    if user.is_file():
        found.append((user, "user"))
    for level in _levels(cwd):
        for name in config.project_files:
            candidate = level / name
            if candidate.is_file():
                found.append((candidate, "project"))
    local = cwd.resolve() / config.local_file
    if local.is_file():
        found.append((local, "local"))
    return found


def instruction_search_places(*, cwd: Path, home: Path, config: InstructionsConfig) -> list[tuple[Path, Kind]]:
    """Every root file discovery looks for, found or not, in load order: what `nova rules` names when
    nothing was found, so the user knows which name to create where."""
    places: list[tuple[Path, Kind]] = [(home / config.user_file, "user")]
    places += [(level / name, "project") for level in _levels(cwd) for name in config.project_files]
    places.append((cwd.resolve() / config.local_file, "local"))
    return places


# -- imports -------------------------------------------------------------------------------------------
def _strip_code_spans(line: str) -> str:
    """Blank out inline code spans: a run of N backticks up to the next run of exactly N."""
    out: list[str] = []
    i = 0
    while i < len(line):
        if line[i] != "`":
            out.append(line[i])
            i += 1
            continue
        run = len(line[i:]) - len(line[i:].lstrip("`"))
        close = re.compile(r"(?<!`)" + "`" * run + r"(?!`)").search(line, i + run)
        if close is None:
            out.append(line[i : i + run])  # an unmatched run is literal text
            i += run
            continue
        out.append(" " * (close.end() - i))
        i = close.end()
    return "".join(out)


def _non_code_lines(text: str) -> Iterator[str]:
    fence: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield _strip_code_spans(line)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and not line.strip()[len(match.group(1)):].strip():
            fence = None


def _looks_like_path(token: str) -> bool:
    return (token.startswith(("./", "../", "~/", "/")) or "/" in token
            or token.lower().endswith(_DOC_SUFFIXES))


def find_imports(text: str) -> list[str]:
    """The `@path` references of `text`, in order, outside code fences and inline code spans."""
    refs: list[str] = []
    for line in _non_code_lines(text):
        for match in _IMPORT.finditer(line):
            token = match.group(1).rstrip(_TRAILING_PUNCTUATION)
            if token and _looks_like_path(token):
                refs.append(token)
    return refs


def _resolve(ref: str, importer: Path) -> Path:
    if ref.startswith("~/"):
        return Path(ref).expanduser()
    path = Path(ref)
    return path if path.is_absolute() else importer.parent / path


def _credential_kind(path: Path, text: str) -> str | None:
    """What makes `path` look like a secret, or None. The name alone is enough for key files; the rule for
    names is the one the reading tools use (nova.fs.secret_paths), so an import and a `read_file` agree."""
    by_name = secret_path_kind(path)
    if by_name is not None:
        return by_name
    return secret_text_kind(text)


# What an import says after the kind of special file it met (nova.fs.special_files names the kind).
_NEVER = {"a FIFO (named pipe)": "; never opened", "a device": "; never read", "a socket": "; never opened"}


def _special_kind(mode: int) -> str | None:
    """Why a stat mode is not a loadable file, or None for a regular file."""
    kind = special_kind(mode)
    if kind is None:
        return None
    return f"is {kind}{_NEVER.get(kind, '')}" if kind != "not a regular file" else "is not a regular file"


def _special_kind_of(path: Path) -> str | None:
    """`_special_kind` of what `path` names, by `stat` alone (nothing is opened); None if it cannot say."""
    try:
        return _special_kind(os.stat(path).st_mode)
    except OSError:
        return None


def _resolve_target(path: Path) -> tuple[Path, str | None]:
    """(resolved path, None) or (best-effort path, reason) when symlinks cannot be resolved."""
    lexical = Path(os.path.abspath(path.expanduser()))
    try:
        return lexical.resolve(), None
    except RuntimeError:  # Python < 3.13 reports a symlink loop this way
        return lexical, "symlink loop; cannot be resolved"
    except OSError as exc:
        return lexical, f"cannot be resolved ({exc.strerror or exc})"


def _read_text(path: Path, *, max_bytes: int) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason). Read through `nova.fs`: the type is checked with `stat` before
    anything is opened, and the open neither blocks nor (the path being resolved already) follows a
    symlink, so a file swapped for a FIFO or a link in between still cannot hang or redirect the read."""
    try:
        before = os.stat(path)
    except FileNotFoundError:
        return None, "not found"
    except OSError as exc:
        if exc.errno == getattr(os, "ELOOP", -1):
            return None, "symlink loop; cannot be resolved"
        return None, f"cannot be read ({exc.strerror or exc})"
    special = _special_kind(before.st_mode)
    if special:
        return None, special
    if before.st_size > max_bytes:
        return None, f"too large: {before.st_size} bytes, the cap per file is {max_bytes}"
    try:
        data = read_bytes(path, limit=max_bytes, what="an instruction file", follow_symlinks=False)
    except NotRegularFile:
        return None, _special_kind_of(path) or "is not a regular file"
    except FileRefused:
        return None, f"too large: more than {max_bytes} bytes, the cap per file"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if b"\x00" in data[:_BINARY_SNIFF]:
        return None, "binary file"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "binary file (not UTF-8 text)"


# Folders of Nova's home that hold its state, never rules: transcripts and spilled tool output, logs,
# skills (which come with scripts and their own trust), memories.
_HOME_STATE_DIRS = frozenset({"sessions", "logs", "skills", "memory"})


def _nova_state(path: Path, *, home: Path, memory_dirs: tuple[Path, ...]) -> str | None:
    """What of Nova's own state `path` (resolved) is, when it is some: never imported. Under `home` only
    rule files are importable: a document (`.md`, `.txt` …) outside the state folders and dot-files."""
    if any(path.is_relative_to(folder) for folder in memory_dirs):
        return "a memory file (memories reach the model only through review and recall)"
    if not path.is_relative_to(home) or path == home:
        return None
    inside = path.relative_to(home)
    if any(part.startswith(".") for part in inside.parts) or (len(inside.parts) > 1
                                                              and inside.parts[0] in _HOME_STATE_DIRS):
        return f"Nova's own state ({inside})"
    if path.suffix.lower() not in _DOC_SUFFIXES:  # config.json, server-token, nova.db and the like
        return f"Nova's own state ({inside}), not a rule file"
    return None


# -- loading -------------------------------------------------------------------------------------------
def load_rules(
    *,
    cwd: Path,
    home: Path,
    config: InstructionsConfig | None = None,
    estimate: TokenEstimator | None = None,
) -> RuleSet:
    """Discover, expand imports, apply the budget, render. Never raises for a bad file: it reports it."""
    config = config or InstructionsConfig()
    count = estimate or estimate_tokens
    resolved: list[LoadedFile] = []
    skipped: list[SkippedFile] = []
    seen: dict[Path, Path | None] = {}

    # Where imports may point: the project and Nova's home, symlinks resolved on both sides.
    roots = tuple(dict.fromkeys(_resolve_target(r)[0] for r in (project_root(cwd), home)))
    home_root = _resolve_target(home)[0]
    memory_dirs = tuple(_resolve_target(d)[0] for d in (home_memory_dir(home), project_memory_dir(cwd)))
    total_bytes = 0

    def refuse(path: Path, why: str, importer: Path | None, ref: str | None) -> None:
        target = f"@{ref}, " if ref is not None else ""
        where = f" ({target}imported by {importer})" if importer else ""
        skipped.append(SkippedFile(path=path, reason=f"{why}{where}", imported_by=importer))

    def visit(path: Path, kind: Kind, importer: Path | None, depth: int, ref: str | None = None) -> None:
        nonlocal total_bytes
        absolute, unresolvable = _resolve_target(path)
        if unresolvable:
            refuse(absolute, unresolvable, importer, ref)
            return
        if absolute in seen:
            first = seen[absolute]
            by = f" (first imported by {first})" if first else ""
            skipped.append(SkippedFile(path=absolute, reason=f"already loaded{by}; deduplicated",
                                       imported_by=importer))
            return
        special = _special_kind_of(absolute)
        if special:  # said first: "is a device" explains `@/dev/zero` better than "outside the project"
            refuse(absolute, special, importer, ref)
            return
        if ref is not None and not any(absolute.is_relative_to(root) for root in roots):
            refuse(absolute, f"refused: outside the project root {roots[0]} and Nova's home {home}; only files "
                             "under them may be imported", importer, ref)
            return
        state = _nova_state(absolute, home=home_root, memory_dirs=memory_dirs) if ref is not None else None
        if state:
            refuse(absolute, f"refused: {state}; only rule files are imported, never what Nova keeps", importer, ref)
            return
        text, problem = _read_text(absolute, max_bytes=config.max_file_bytes)
        if text is None:
            refuse(absolute, problem or "cannot be read", importer, ref)
            return
        secret = _credential_kind(absolute, text)
        if secret:
            refuse(absolute, f"refused: looks like {secret}; secrets never go into the prompt", importer, ref)
            return
        redacted: tuple[str, ...] = ()
        if kind == "import" and (findings := find_secrets(text)):
            # What an import adds is someone else's file: a token in it must not reach the provider.
            text, redacted = redact(text, findings), tuple(sorted({f.kind for f in findings}))
        size = len(text.encode("utf-8"))
        if total_bytes + size > config.max_total_bytes:
            refuse(absolute, f"refused: over the total size cap: {size} bytes would make {total_bytes + size}, the "
                             f"cap for all instruction files is {config.max_total_bytes}", importer, ref)
            return
        total_bytes += size
        seen[absolute] = importer
        resolved.append(LoadedFile(path=absolute, kind=kind, imported_by=importer, depth=depth,
                                   tokens=count(text), text=text, redacted=redacted))
        for ref_text in find_imports(text):
            target = _resolve(ref_text, absolute)
            if depth + 1 > config.max_import_depth:
                skipped.append(SkippedFile(
                    path=_resolve_target(target)[0], imported_by=absolute,
                    reason=f"import depth limit: would be depth {depth + 1}, the maximum is "
                           f"{config.max_import_depth} (imported by {absolute})",
                ))
                continue
            visit(target, "import", absolute, depth + 1, ref_text)

    for path, kind in discover_instruction_files(cwd=cwd, home=home, config=config):
        visit(path, kind, None, 0)

    admitted: list[LoadedFile] = []
    dropped: set[Path] = set()
    remaining = config.token_budget
    for loaded in resolved:
        if loaded.imported_by in dropped:
            dropped.add(loaded.path)
            skipped.append(SkippedFile(path=loaded.path, imported_by=loaded.imported_by,
                                       reason=f"not loaded: its importer {loaded.imported_by} was over budget"))
            continue
        if loaded.tokens > remaining:
            dropped.add(loaded.path)
            skipped.append(SkippedFile(
                path=loaded.path, imported_by=loaded.imported_by,
                reason=f"over token budget: needs {loaded.tokens} tokens, {remaining} of "
                       f"{config.token_budget} left",
            ))
            continue
        remaining -= loaded.tokens
        admitted.append(loaded)
    return RuleSet(files=tuple(admitted), skipped=tuple(skipped), token_budget=config.token_budget,
                   text=render_rules(admitted))


_KIND_LABEL = {"user": "user instructions", "project": "project instructions",
               "local": "local instructions", "import": "imported"}


def render_rules(files: list[LoadedFile]) -> str:
    """One block per file, headed by its path, so the model (and a human reading a manifest) can tell
    which file a rule came from."""
    blocks = []
    for f in files:
        label = _KIND_LABEL[f.kind] + (f" by {f.imported_by}" if f.imported_by else "")
        blocks.append(f"Contents of {f.path} ({label}):\n\n{f.text.strip()}")
    return "\n\n".join(blocks)
