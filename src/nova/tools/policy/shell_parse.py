"""What a bash command line would run, as the permission policy needs to see it.

`parse_command_line` parses the line with tree-sitter's bash grammar and returns every simple command
in it, wherever it sits: in pipelines and lists, subshells and groups, loops, conditions and function
bodies, command and process substitutions, heredocs, and in `bash -c 'STRING'` (parsed again). Each
command is normalized the way the shell would see it:

- quotes and escapes are removed (`'git' push`, `git pu''sh`, `g\\it push`, `$'...'`);
- leading assignments and redirections are set aside (`A=1 2>&1 git push` runs `git push`);
- a path is reduced to the command's name (`/usr/bin/git` is `git`);
- wrapper commands are peeled (`env`, `timeout`, `nice`, `stdbuf`, `ionice`, `command`, `exec`,
  `nohup`, `xargs`, `sudo`, `time`, `builtin`, ...), each with its own options;
- git's global options are skipped (`git -C . --no-pager push` is `git push`).

A command is *unresolved* when what it runs is only known at run time: `eval`, `source`, a shell
reading a script or its input, `bash -c "$x"`, a command word built from an expansion, `xargs -I`, a
line that does not parse or that the grammar reads differently from bash. The policy never lets a rule
allow those. A command whose later words are only known at run time (`git $x`, `xargs git`, `find
-exec git {} +`) carries the known beginning, so a deny rule that could match it applies.

Each command carries two spellings: `exact` keeps everything that changes what runs (assignments,
wrappers, the path, git's options) and is what allow rules must match; `forms` holds every spelling
from the exact one down to the bare command, and a deny or ask rule matching any of them applies.

Writes the parser can see (redirection targets, `tee`, `cp`/`mv`/`install`/`ln` destinations, `rm`,
`touch`, `mkdir`, `sed -i`, `truncate`, `dd of=`, `chmod`/`chown`, ...) are listed too, with the
directories `cd`/`pushd` may have moved to, so protected paths can be checked.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nova.tools.policy.git_exec import config_key_runs_program, env_runs_program
from nova.tools.policy.shell_commands import (
    EXTRA_WRAPPERS,
    ArchiveWrite,
    command_string,
    inline_code,
    option_spellings,
    options_end,
    reads_only,
    written_by,
)

__all__ = ["NULL_SINKS", "ShellCommand", "ShellLine", "ShellWrite", "could_match_longer", "parse_command_line"]

_MAX_SHELL_DEPTH = 4
"""`bash -c` inside `bash -c` ... deeper than this is adversarial: the command is unresolved."""
_MAX_NODE_DEPTH = 150
"""Syntax nesting deeper than this (`$($($(...)))`) is unresolved rather than walked without bound."""


@dataclass(frozen=True, slots=True)
class ShellCommand:
    """One simple command the line would run."""

    exact: str
    """The command as it runs, quotes and escapes removed: assignments, wrappers, path and options
    kept, redirections at the end. What an allow rule must match."""
    text: str
    """The bare command: wrappers peeled, path reduced to the name, git's global options skipped."""
    forms: tuple[str, ...]
    """Every spelling from `exact` to `text`; a deny or ask rule matching any of them applies."""
    unresolved: str | None = None
    """Why what this runs cannot be known before it runs, or None."""
    notes: tuple[str, ...] = ()
    """How `exact` became `text`, for explanations."""
    open_prefixes: tuple[str, ...] = ()
    """Beginnings of the command whose rest is only known at run time: up to a word with an expansion
    (`git $x`), or all of it when words are added (`xargs git`, `find -exec git {} +`). A deny or ask rule
    applies if it could match some command that starts so."""


@dataclass(frozen=True, slots=True)
class ShellWrite:
    path: str
    """The target as written, quotes removed (relative paths are relative to where the shell runs); for
    a write whose place is only known at run time, the text that names it (`$f`, `$(pwd)/x`)."""
    via: str
    """What writes it: "`>` redirection", "`tee`", ..."""
    dynamic: bool = False
    """The place is only known at run time (an expansion the parser cannot follow, or files a command
    writes that its arguments do not name): it may be anywhere."""
    archive: ArchiveWrite | None = None
    """An archive unpacked into `path`: the files it holds are written there."""


@dataclass(frozen=True, slots=True)
class ShellLine:
    commands: tuple[ShellCommand, ...]
    writes: tuple[ShellWrite, ...] = ()
    dirs: tuple[str, ...] = ()
    """Literal targets of `cd`/`pushd` in the line (`~` for a bare `cd`): relative writes may land there."""

    @property
    def unresolved(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.unresolved for c in self.commands if c.unresolved))

    @property
    def read_only(self) -> bool:
        """Every command only reads (`ls`, `cat`, `grep`, `git status`...; see
        `nova.tools.policy.shell_commands.reads_only`) and nothing is written but the null device."""
        return (bool(self.commands) and not self.unresolved
                and all(w.path in NULL_SINKS and not w.dynamic for w in self.writes)
                and all(reads_only(c.text.split()) for c in self.commands))


NULL_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})
"""Write targets that are not files: output thrown away or sent back to the caller."""


# -- the parser --------------------------------------------------------------------------------------
@functools.cache
def _language() -> Any:
    # Imported here: the grammar loads only when the first bash command is checked, not at start-up.
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


# A tree-sitter parser holds mutable state and is not safe to share between threads (the server checks
# several sessions' commands at once), so each thread gets its own; the language is shared.
_per_thread = threading.local()


def _parser() -> Any:
    parser = getattr(_per_thread, "parser", None)
    if parser is None:
        import tree_sitter

        parser = _per_thread.parser = tree_sitter.Parser(_language())
    return parser


def parse_command_line(line: str) -> ShellLine:
    """The commands `line` would run, normalized, with the writes the parser can see. Never raises."""
    walker = _Walker()
    try:
        walker.parse(line, depth=0)
    except RecursionError:  # depth limits hold per shell level; nesting on every level could still get here
        whole = " ".join(line.split())
        return ShellLine((ShellCommand(exact=whole, text=whole, forms=(whole,), unresolved="nested too deeply to check"),))
    return ShellLine(tuple(walker.commands), tuple(walker.writes), tuple(dict.fromkeys(walker.dirs)))


# -- words -------------------------------------------------------------------------------------------
_NON_ASCII_RE = re.compile(rb"[\x80-\xff]")


def _masked(source: bytes) -> bytes:
    """`source` with every non-ASCII byte replaced by `x`, byte for byte, for the grammar to read.

    The bash grammar's scanner calls the C `isdigit` on the character after a `{`; with a code point
    past 255 that reads outside the C library's table and can crash the process. The shell itself
    treats every non-ASCII byte as an ordinary word character, so the masked line parses to the same
    tree; offsets are unchanged and node text is read from the original bytes (`_text`)."""
    return _NON_ASCII_RE.sub(b"x", source)


def _source() -> bytes:
    """The original bytes of the line being walked (`bash -c` strings nest: innermost last)."""
    sources: list[bytes] = _per_thread.sources
    return sources[-1]


def _raw(node: Any) -> bytes:
    return _source()[node.start_byte:node.end_byte]


def _text(node: Any) -> str:
    return _decode(_raw(node))


def _decode(data: bytes) -> str:
    """Source bytes back to text. The line was encoded with lone surrogates passed through (they may be
    in a model's tool input), so they come back as they were."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a node boundary inside a character: never expected, never fatal
        return data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class _Word:
    value: str
    """The word after quote removal; the source text when it is not static."""
    static: bool
    """False when the shell builds it at run time (an expansion, a substitution)."""
    pattern: bool = False
    """True when unquoted glob or brace characters make the shell expand it."""


_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE_RE = re.compile(r"\\([$`\"\\\n])")
_GLOB_CHARS = frozenset("*?[{")


def _unescape_unquoted(text: str) -> tuple[str, bool]:
    """An unquoted word's value (`\\x` is `x`, backslash-newline vanishes), and whether an unescaped
    glob or brace character is left for the shell to expand."""
    pattern = False
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] in _GLOB_CHARS:
            pattern = True
        i += 1
    return _ESCAPE_RE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text), pattern


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_RE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL)


def _ansi_c(body: str) -> str:
    """The value of `$'...'` (body without the quotes), decoded as bash does."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU" and len(code) > 1:
            try:
                return chr(int(code[1:], 16))
            except (ValueError, OverflowError):
                return "\ufffd"
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1].upper()) ^ 0x40) if code[1].isascii() else code[1]
        return _ANSI_SIMPLE.get(code, "\\" + code)

    return _ANSI_RE.sub(one, body)


def _word(node: Any) -> _Word:
    kind = node.type
    text = _text(node)
    if kind == "word" or kind == "number":
        value, pattern = _unescape_unquoted(text)
        return _Word(value, True, pattern)
    if kind == "raw_string":
        return _Word(text[1:-1], True)
    if kind == "ansi_c_string":
        return _Word(_ansi_c(text[2:-1]), True)
    if kind in ("string", "translated_string"):
        if any(child.is_named and child.type != "string_content" for child in node.children):
            return _Word(text, False)
        body = text[1:] if text.startswith("$") else text
        return _Word(_DQ_ESCAPE_RE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), body[1:-1]), True)
    if kind == "concatenation":
        parts = [_word(child) if child.is_named else _Word(*_unescape_unquoted(_text(child)))
                 for child in node.children]
        if all(p.static for p in parts):
            return _Word("".join(p.value for p in parts), True, any(p.pattern for p in parts))
        return _Word(text, False)
    # Expansions, substitutions, arithmetic, arrays: known only at run time.
    return _Word(text, False)


# -- wrappers and the commands with their own grammar --------------------------------------------------
_options = options_end

_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh", "rbash"})
_RUNS_ITS_INPUT = {
    "eval": "eval runs a string built at run time",
    "source": "source runs a file's commands",
    ".": ". runs a file's commands",
}


def _peel_env(argv: list[str]) -> tuple[int, str | None]:
    i = _options(argv, 1, with_value=frozenset("uCPS"), long_with_value=frozenset({"--unset", "--chdir"}))
    if any(w == "-S" or w.startswith("--split-string") or (w.startswith("-") and not w.startswith("--")
           and "S" in w) for w in argv[1:i]):
        return i, "env -S splits a string into a command at run time"
    while i < len(argv) and _ASSIGNMENT_RE.match(argv[i]):
        i += 1
    return i, None


def _peel_timeout(argv: list[str]) -> tuple[int, str | None]:
    i = _options(argv, 1, with_value=frozenset("ks"), long_with_value=frozenset({"--kill-after", "--signal"}))
    return min(i + 1, len(argv)), None  # the duration


def _peel_sudo(argv: list[str]) -> tuple[int, str | None]:
    i = _options(argv, 1, with_value=frozenset("ugCDhprtUTR"),
                 long_with_value=frozenset({"--user", "--group", "--close-from", "--chdir", "--host", "--prompt",
                                            "--role", "--type", "--other-user", "--command-timeout", "--chroot"}))
    flags = "".join(w for w in argv[1:i] if w.startswith("-") and not w.startswith("--"))
    if "s" in flags or "i" in flags or "--shell" in argv[1:i] or "--login" in argv[1:i]:
        return i, "sudo -s/-i hands the command to a shell"
    while i < len(argv) and _ASSIGNMENT_RE.match(argv[i]):
        i += 1
    return i, None


def _peel_xargs(argv: list[str]) -> tuple[int, str | None]:
    i = _options(argv, 1, with_value=frozenset("IiLlnPdEsae"),
                 long_with_value=frozenset({"--replace", "--max-lines", "--max-args", "--max-procs", "--delimiter",
                                            "--eof", "--max-chars", "--arg-file", "--process-slot-var"}))
    if any(w.startswith(("-I", "-i", "--replace")) for w in argv[1:i]):
        return i, "xargs -I builds the command from its input"
    return i, None


def _simple_peeler(with_value: str, long_with_value: tuple[str, ...] = (), *, digits: bool = False,
                   stop_flags: str = "") -> Callable[[list[str]], tuple[int, str | None]]:
    def peel(argv: list[str]) -> tuple[int, str | None]:
        i = _options(argv, 1, with_value=frozenset(with_value), long_with_value=frozenset(long_with_value),
                     digits=digits)
        if stop_flags and any(w.startswith("-") and not w.startswith("--") and set(w[1:]) & set(stop_flags)
                              for w in argv[1:i]):
            return len(argv) + 1, None  # `command -v git` only looks a command up
        return i, None

    return peel


_WRAPPERS: dict[str, Callable[[list[str]], tuple[int, str | None]]] = {
    "env": _peel_env,
    "timeout": _peel_timeout,
    "nice": _simple_peeler("n", ("--adjustment",), digits=True),
    "stdbuf": _simple_peeler("ioe", ("--input", "--output", "--error")),
    "ionice": _simple_peeler("cnP", ("--class", "--classdata"), stop_flags="pP"),
    "command": _simple_peeler("", stop_flags="vV"),
    "exec": _simple_peeler("a"),
    "nohup": _simple_peeler(""),
    "setsid": _simple_peeler(""),
    "time": _simple_peeler("fo", ("--format", "--output")),
    "builtin": _simple_peeler(""),
    "coproc": _simple_peeler(""),
    "!": lambda argv: (1, None),  # `! ! cmd`: the grammar takes the second `!` for a command name
    "sudo": _peel_sudo,
    "doas": _simple_peeler("uC"),
    "xargs": _peel_xargs,
}

# The grammar does not know every place a keyword may stand (`! if ...; fi`, `time { ...; }`) and then
# reads it as a command's name. The shell would not: peel it to show the command behind, and flag it.
for _keyword in ("if", "then", "elif", "else", "fi", "do", "done", "while", "until", "for", "select", "case",
                 "esac", "{", "}", "function", "in", "[[", "]]"):
    _WRAPPERS[_keyword] = lambda argv: (1, f"the parser read the shell keyword `{argv[0]}` as a command")

_WRAPPERS.update(EXTRA_WRAPPERS)


def _renames_commands(argv: list[str]) -> str | None:
    """Builtins after which a name runs something else than its command: `hash -p PATH NAME`, aliases
    (run by a non-interactive shell once `expand_aliases` is on), `enable -f` (a builtin from a file)."""
    name = argv[0]
    if name == "hash" and any(w.startswith("-") and "p" in w for w in argv[1:]):
        return "hash -p makes a name run another program"
    if name == "alias" and any("=" in w for w in argv[1:]):
        return "an alias makes a name run another command"
    if name == "shopt" and "expand_aliases" in argv and any(w.startswith("-") and "s" in w for w in argv[1:]):
        return "shopt -s expand_aliases lets aliases run other commands"
    if name == "enable" and any(w.startswith("-") and "f" in w for w in argv[1:]):
        return "enable -f loads a builtin from a file"
    return None


def _git_config_on_command_line(options: list[str]) -> str | None:
    """Why git's global options (`-c KEY=VALUE`, `--config-env=KEY=VAR`) make git run a program the
    parser cannot see (`-c core.fsmonitor=CMD`, `-c core.sshCommand=CMD`...), or None."""
    for i, word in enumerate(options):
        if word in ("-c", "--config-env") and i + 1 < len(options):
            pair = options[i + 1]
        elif word.startswith("-c") and len(word) > 2:
            pair = word[2:]
        elif word.startswith("--config-env="):
            pair = word.split("=", 1)[1]
        else:
            continue
        key = pair.split("=", 1)[0]
        if word.startswith("--config-env") or config_key_runs_program(key):
            return f"git -c {key} makes git run a program the parser cannot check"
    return None


_GIT_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                             "--super-prefix", "--attr-source", "--list-cmds"})


def _git_subcommand_at(argv: list[str]) -> int:
    """Index of git's subcommand, past its global options."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1 if "=" in argv[i] or argv[i] not in _GIT_WITH_VALUE else 2
    return i


_NETWORK_DEVICE_RE = re.compile(r"^/dev/(?:tcp|udp)/")
_RISKY_ENV = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND",
                        "SHELLOPTS", "BASHOPTS", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "PYTHONSTARTUP"})
"""Variables that make a later command run code the parser never sees (besides git's own)."""
_MAX_BRACE_WORDS = 64


def _env_changes_what_runs(assignment: str) -> str | None:
    name = assignment.split("=", 1)[0].lstrip("+")
    if env_runs_program(name) or name in _RISKY_ENV or name.startswith("BASH_FUNC_"):
        return f"setting {name} makes a command run code the parser cannot check"
    return None


def _brace_expand(text: str, budget: int = _MAX_BRACE_WORDS) -> list[str] | None:
    """Bash's brace expansion of one word (`a{b,c}d` is `abd acd`, `{1..3}` is `1 2 3`), or None past
    `budget` words. Escapes were already removed from `text`, so a quoted brace is expanded too: this
    only ever adds spellings for deny rules to match."""
    depth = 0
    start = -1
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                body = text[start + 1:i]
                choices = _brace_choices(body)
                if choices is None:
                    continue
                out: list[str] = []
                for choice in choices:
                    for rest in _brace_expand(text[:start] + choice + text[i + 1:], budget - len(out)) or []:
                        out.append(rest)
                        if len(out) > budget:
                            return None
                return out
    return [text]


_SEQUENCE_RE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")


def _brace_choices(body: str) -> list[str] | None:
    """The alternatives of `{body}`: split at top-level commas, or a sequence; None when the braces are
    literal (`{}`, `{x}`)."""
    sequence = _SEQUENCE_RE.match(body)
    if sequence:
        first, last, step = sequence.group(1), sequence.group(2), int(sequence.group(3) or 1) or 1
        if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
            a, b = int(first), int(last)
            values = range(a, b + (1 if b >= a else -1), abs(step) if b >= a else -abs(step))
            return [str(v) for v in list(values)[:_MAX_BRACE_WORDS + 1]]
        if first.isalpha() and last.isalpha():
            a, b = ord(first), ord(last)
            return [chr(v) for v in range(a, b + (1 if b >= a else -1), 1 if b >= a else -1)]
        return None
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}" and depth > 0
        current += ch
    if not parts:
        return None
    return [*parts, current]


def _brace_words(words: list[_Word]) -> list[_Word] | None:
    """The words after brace expansion, or None when no word expands (or one expands past the bound)."""
    if not any(w.static and w.pattern and "{" in w.value for w in words):
        return None
    out: list[_Word] = []
    changed = False
    for word in words:
        if not (word.static and word.pattern and "{" in word.value):
            out.append(word)
            continue
        pieces = _brace_expand(word.value)
        if pieces is None:
            return None
        changed = changed or pieces != [word.value]
        out.extend(_Word(p, True, any(c in p for c in "*?[")) for p in pieces if p != "" or len(pieces) == 1)
    return out if changed and out else None


_CONTINUATION_RE = re.compile(rb"(?:\\\n)+")
_HOME_RE = re.compile(r"^\$(?:HOME\b|\{HOME\})")
_WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<>"})


# -- the walk -----------------------------------------------------------------------------------------
@dataclass
class _Walker:
    commands: list[ShellCommand] = field(default_factory=list)
    writes: list[ShellWrite] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    _trailing: dict[int, tuple[Sequence[Any], Sequence[str]]] = field(default_factory=dict)
    """Words and redirections the grammar put after a command's redirections, keyed by the command node."""
    assigned: dict[str, str] = field(default_factory=dict)
    """Variables the line sets to a value known before it runs (`f=NOVA.md`), to follow `> $f`."""

    def parse(self, line: str, *, depth: int) -> None:
        if depth > _MAX_SHELL_DEPTH:
            self._unresolved(line, "shells nested too deeply to check")
            return
        source = line.encode("utf-8", "surrogatepass")
        tree = _parser().parse(_masked(source))
        if tree.root_node.has_error:
            self._unresolved(line, "the shell parser cannot read this line")
            return
        sources = _per_thread.__dict__.setdefault("sources", [])
        sources.append(source)
        try:
            self._walk(tree.root_node, shell_depth=depth, node_depth=0)
        finally:
            sources.pop()

    def _unresolved(self, text: str, why: str) -> None:
        whole = " ".join(text.split())
        self.commands.append(ShellCommand(exact=whole, text=whole, forms=(whole,), unresolved=why))

    def _walk(self, node: Any, *, shell_depth: int, node_depth: int) -> None:
        if node_depth > _MAX_NODE_DEPTH:
            self._unresolved(_text(node), "nested too deeply to check")
            return
        kind = node.type
        if kind == "command":
            self._command(node, shell_depth=shell_depth, node_depth=node_depth)
            return
        if kind == "redirected_statement":
            self._redirected(node, shell_depth=shell_depth, node_depth=node_depth)
            return
        if kind == "declaration_command" or kind == "unset_command":
            words = [node.children[0].type] + [_word(c).value for c in node.children[1:] if c.is_named]
            text = " ".join(words)
            self.commands.append(ShellCommand(exact=text, text=text, forms=(text,)))
        elif kind == "file_redirect":
            self._redirect(node)
        elif kind == "variable_assignment":
            self._assignment(node)
        for child in node.children:
            self._walk(child, shell_depth=shell_depth, node_depth=node_depth + 1)

    def _assignment(self, node: Any) -> None:
        """`NAME=value`, alone, before a command or after `export`: remembered when static (for writes
        through `$NAME`), and a command that cannot be checked when it changes what later commands run."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            return
        text = _text(name)
        risky = _env_changes_what_runs(f"{text}=")
        if risky:
            self._unresolved(_text(node), risky)
        if value is None:
            self.assigned[text] = ""
            return
        word = _word(value)
        if word.static:
            self.assigned[text] = word.value
        else:
            self.assigned.pop(text, None)

    def _redirect(self, node: Any) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        if destination is None or destination.type in ("number", "process_substitution"):
            return
        target = _word(destination).value
        if _NETWORK_DEVICE_RE.match(target.lstrip('"')):
            # bash opens a socket for these names, whichever way the redirection points.
            self._unresolved(_text(node), f"`{operator} {target}` opens a network connection")
            return
        if operator in _WRITE_REDIRECTS:
            self._write(target, f"`{operator}` redirection")

    _VARIABLE_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")

    def _write(self, path: str, via: str) -> None:
        """A file the line writes. `$HOME` and `${HOME}` are read as `~`, and a variable the line set to a
        known value (`f=NOVA.md; echo x > $f`) as that value; anything else built at run time is a
        write to a place the parser cannot know."""
        if path == "-":
            return
        if "$" in path or "`" in path:
            known = _HOME_RE.sub("~", path.replace('"', ""))
            known = self._VARIABLE_RE.sub(lambda m: self.assigned.get(m.group(1) or m.group(2), m.group(0)), known)
            if "$" in known or "`" in known:
                self.writes.append(ShellWrite(path, via, dynamic=True))
                return
            path = known
        self.writes.append(ShellWrite(path, via))

    def _redirected(self, node: Any, *, shell_depth: int, node_depth: int) -> None:
        """A statement with redirections after it. The grammar files words that follow a redirection
        (`git >/dev/null push`, `cat <<EOF x`) under the redirection, but the shell passes them to the
        command as arguments: hand them back to it."""
        body = node.child_by_field_name("body")
        redirects = node.children_by_field_name("redirect")
        extra: list[Any] = []
        shown: list[bytes] = []
        for redirect in redirects:
            if redirect.type == "file_redirect":
                destinations = redirect.children_by_field_name("destination")
                extra.extend(destinations[1:])
                end = destinations[0].end_byte if destinations else redirect.end_byte
                shown.append(_source()[redirect.start_byte:end])
            elif redirect.type == "heredoc_redirect":
                extra.extend(redirect.children_by_field_name("argument"))
                start = next((c for c in redirect.children if c.type == "heredoc_start"), redirect.children[0])
                shown.append(_source()[redirect.start_byte:start.end_byte])
            else:
                shown.append(_raw(redirect))
        # After a pipeline the redirections belong to its last command.
        target = body
        while target is not None and target.type == "pipeline" and target.named_children:
            target = target.named_children[-1]
        if target is not None and target.type == "command":
            self._trailing[target.id] = (extra, [" ".join(_decode(t).split()) for t in shown])
        elif extra:
            self._unresolved(_text(node), "words after a redirection")
        if body is not None:
            self._walk(body, shell_depth=shell_depth, node_depth=node_depth + 1)
        for redirect in redirects:
            self._walk(redirect, shell_depth=shell_depth, node_depth=node_depth + 1)

    def _join_continued(self, nodes: list[Any]) -> tuple[list[_Word], bool]:
        """The words of a command, and whether the grammar read them in a way the shell would not.

        The grammar splits a word at a backslash-newline (`git pu\\<newline>sh`) where the shell joins
        the halves (`git push`): words with only that between them are one. A bare newline between two
        words or inside an unquoted one ends a command in the shell; the grammar sometimes keeps going
        (`ls<newline>\\git push` as one command), so such a reading is flagged."""
        source = _source()
        words: list[_Word] = []
        misread = False
        previous_end = -1
        for node in sorted(nodes, key=lambda n: n.start_byte):
            word = _word(node)
            gap = source[previous_end:node.start_byte] if words else b""
            if words and _CONTINUATION_RE.fullmatch(gap):
                last = words[-1]
                words[-1] = _Word(last.value + word.value, last.static and word.static, last.pattern or word.pattern)
            else:
                words.append(word)
            if b"\n" in _CONTINUATION_RE.sub(b"", gap) or (node.type == "word" and "\n" in _ESCAPE_RE.sub(
                    "", _text(node))):
                misread = True
            previous_end = node.end_byte
        return words, misread

    def _command(self, node: Any, *, shell_depth: int, node_depth: int) -> None:
        extra_words, extra_redirects = self._trailing.pop(node.id, ((), ()))
        assignments: list[str] = []
        redirects: list[str] = []
        word_nodes: list[Any] = []
        for child in node.children:
            if child.type == "variable_assignment":
                assignments.append(_text(child))
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(" ".join(_text(child).split()))
            elif child.is_named and child.type != "comment":
                word_nodes.append(child.named_children[0] if child.type == "command_name" else child)
        words, misread = self._join_continued([*word_nodes, *extra_words])
        redirects.extend(extra_redirects)
        # Substitutions inside the words, assignments and redirections run first; walk them all.
        for child in node.children:
            self._walk(child, shell_depth=shell_depth, node_depth=node_depth + 1)
        if not words:
            return
        argv = [w.value for w in words]
        exact = " ".join([*assignments, *argv, *redirects])
        expanded = None if misread else _brace_words(words)
        if expanded is not None:
            # The shell runs the words brace expansion makes (`git {push,x}` is `git push x`): that
            # spelling is checked too, as a command of its own an allow rule must also cover.
            ex_argv = [w.value for w in expanded]
            self._resolve(ex_argv, expanded, exact=" ".join([*assignments, *ex_argv, *redirects]),
                          shell_depth=shell_depth)
        if misread:
            self.commands.append(ShellCommand(exact=exact, text=exact, forms=(exact, *(w.value for w in words)),
                                              unresolved="the shell may split this command differently"))
            return
        head = words[0]
        if not head.static or (head.pattern and head.value not in ("[", "[[")):
            self.commands.append(ShellCommand(exact=exact, text=exact, forms=(exact,),
                                              unresolved="the command name is only known at run time"))
            return
        self._resolve(argv, words, exact=exact, shell_depth=shell_depth)

    def _resolve(self, argv: list[str], words: list[_Word], *, exact: str, shell_depth: int,
                 more_args: bool = False) -> None:
        forms = [exact]
        notes: list[str] = []
        unresolved: str | None = None
        offset = 0  # argv is always the tail of the command's words from here
        static = [w.static for w in words]  # beside argv, through every change made to it
        prefixes: list[str] = []

        def add_form() -> None:
            forms.append(" ".join(argv))
            dynamic = next((i for i, known in enumerate(static) if not known), None)
            if dynamic is not None and dynamic > 0:
                prefixes.append(" ".join(argv[:dynamic]) + " ")
        for _ in range(16):  # `nice nice nice ...`: each pass peels one wrapper
            head = words[offset]
            if not head.static or (head.pattern and head.value not in ("[", "[[")):
                unresolved = unresolved or "the command name is only known at run time"
            name = argv[0]
            if "/" in name:
                argv = [os.path.basename(name.rstrip("/")) or name, *argv[1:]]
                notes.append(f"{name} is the command {argv[0]}")
                name = argv[0]
            add_form()
            peel = _WRAPPERS.get(name)
            if peel is None:
                break
            more_args = more_args or name == "xargs"
            start, why = peel(argv)
            unresolved = unresolved or why
            if name == "env":
                unresolved = unresolved or next(
                    (r for w in argv[1:start] if _ASSIGNMENT_RE.match(w) and (r := _env_changes_what_runs(w))), None)
            if start >= len(argv):
                break
            # Assignments after a keyword (`! A=1 cmd`, `time A=1 cmd`) are still assignments; after other
            # wrappers they would be the command's name, so dropping them only ever shows more.
            while start < len(argv) - 1 and _ASSIGNMENT_RE.match(argv[start]):
                start += 1
            notes.append(f"wrapper `{' '.join(argv[:start])}` peeled")
            argv = argv[start:]
            static = static[start:]
            offset += start
        else:
            unresolved = unresolved or "wrappers nested too deeply to check"

        name = argv[0]
        if name == "git":
            at = _git_subcommand_at(argv)
            if any(w.startswith(("-calias.", "--config-env=alias.", "alias.")) for w in argv[1:at]):
                unresolved = unresolved or "a git alias defined on the command line"
            unresolved = unresolved or _git_config_on_command_line(argv[1:at])
            if at > 1:
                notes.append(f"git global options `{' '.join(argv[1:at])}` skipped")
                argv = ["git", *argv[at:]]
                static = [True, *static[at:]]
                add_form()
        unresolved = unresolved or _RUNS_ITS_INPUT.get(name) or _renames_commands(argv) or inline_code(argv)
        if name in _SHELLS:
            unresolved = unresolved or self._shell(argv, words[offset:], shell_depth=shell_depth)
        if name == "trap":
            unresolved = unresolved or self._trap(argv, words[offset:], shell_depth=shell_depth)
        string_at, why = command_string(argv)
        if string_at is not None:
            unresolved = unresolved or self._string(argv, words[offset:], string_at, shell_depth=shell_depth)
        unresolved = unresolved or why
        if name in ("cd", "pushd"):
            targets = [w for w in argv[1:] if not w.startswith("-")]
            self.dirs.append(targets[0] if targets else "~")
        if name == "find":
            self._find_exec(argv, words[offset:], shell_depth=shell_depth)
        paths, unknown, archives = written_by(argv)
        for path in paths:
            self._write(path, f"`{name}`")
        for why in unknown:
            self.writes.append(ShellWrite(name, why, dynamic=True))
        for archive in archives:
            self.writes.append(ShellWrite(archive.into, f"`{name}` unpacking {archive.archive}", archive=archive))
        spellings = option_spellings(argv)
        if spellings:
            notes.append("options gathered in every order")
            forms.extend(spellings)
        if name == "find" and "-delete" in argv:
            # A deny rule on recursive deletion means this too.
            starts = [w for w in itertools.takewhile(lambda w: not w.startswith(("-", "(", "!")), argv[1:])]
            forms.append(" ".join(["rm -rf", *(starts or ["."])]))
        if more_args:
            prefixes.extend(f + " " for f in forms)
        self.commands.append(ShellCommand(exact=exact, text=" ".join(argv), forms=tuple(dict.fromkeys(forms)),
                                          unresolved=unresolved, notes=tuple(notes),
                                          open_prefixes=tuple(dict.fromkeys(prefixes))))

    def _find_exec(self, argv: list[str], words: list[_Word], *, shell_depth: int) -> None:
        """`find ... -exec CMD ARGS ;` (and `-execdir`, `-ok`, `-okdir`, `+`) runs CMD for each file."""
        i = 1
        while i < len(argv):
            if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(argv)) if argv[j] in (";", "+")), len(argv))
                if end > i + 1:
                    inner = argv[i + 1:end]
                    self._resolve(inner, words[i + 1:end], exact=" ".join(inner), shell_depth=shell_depth,
                                  more_args=True)
                i = end
            i += 1

    def _trap(self, argv: list[str], words: list[_Word], *, shell_depth: int) -> str | None:
        """`trap 'CMD' EXIT` runs CMD later, when the signal comes (or the shell exits): parsed like
        `bash -c 'CMD'`."""
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
            if argv[i] in ("-p", "-l", "-P"):
                return None
            i += 1
            if argv[i - 1] == "--":
                break
        if i >= len(argv) - 1 or argv[i] == "-":
            return None  # `trap SIGNAL` or `trap - SIGNAL` resets; nothing runs
        if not words[i].static:
            return "trap runs a string built at run time"
        self.parse(argv[i], depth=shell_depth + 1)
        return None

    def _string(self, argv: list[str], words: list[_Word], at: int, *, shell_depth: int) -> str | None:
        """A command string handed to a shell (`su -c 'CMD'`, `script -qc 'CMD'`, `watch CMD ARGS`):
        parsed like `bash -c`."""
        pieces = words[at:] if argv[0] in ("watch", "sg") else words[at:at + 1]
        if not pieces or not all(w.static for w in pieces):
            return f"{argv[0]} runs a string built at run time"
        self.parse(" ".join(w.value for w in pieces), depth=shell_depth + 1)
        return None

    def _shell(self, argv: list[str], words: list[_Word], *, shell_depth: int) -> str | None:
        """`bash -c 'STRING'` is parsed as the commands it runs; any other shell invocation runs a script
        or its input, which cannot be checked here."""
        i = 1
        while i < len(argv):
            word = argv[i]
            if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                i += 2
                continue
            if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
                if i + 1 >= len(argv):
                    return "a shell with -c and no command"
                if not words[i + 1].static:
                    return f"{argv[0]} -c runs a string built at run time"
                self.parse(argv[i + 1], depth=shell_depth + 1)
                return None
            if word.startswith(("-", "+")) and word not in ("-", "--"):
                i += 1
                continue
            break
        return f"{argv[0]} runs a script or its input, which cannot be checked before it runs"



# -- patterns over commands that grow at run time ---------------------------------------------------------
def _pattern_tokens(pattern: str) -> list[tuple[str, Any]]:
    """An fnmatch pattern as tokens: ("*", None), ("?", None), ("set", compiled class), ("char", c)."""
    tokens: list[tuple[str, Any]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            if not tokens or tokens[-1][0] != "*":
                tokens.append(("*", None))
        elif c == "?":
            tokens.append(("?", None))
        elif c == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            close = pattern.find("]", j)
            if close == -1:
                tokens.append(("char", c))
            else:
                tokens.append(("set", re.compile(fnmatch.translate(pattern[i:close + 1]))))
                i = close
        else:
            tokens.append(("char", c))
        i += 1
    return tokens


def could_match_longer(pattern: str, prefix: str) -> bool:
    """Whether some string starting with `prefix` matches the fnmatch `pattern` (case-sensitive): would a
    rule match this command once more words are added to it?"""
    tokens = _pattern_tokens(pattern)

    def closure(states: set[int]) -> set[int]:
        out = set(states)
        for state in sorted(states):
            while state < len(tokens) and tokens[state][0] == "*":
                state += 1
                out.add(state)
        return out

    states = closure({0})
    for ch in prefix:
        following: set[int] = set()
        for state in states:
            if state == len(tokens):
                continue
            kind, value = tokens[state]
            if kind == "*":
                following.add(state)
            elif kind == "?" or (kind == "char" and value == ch) or (kind == "set" and value.match(ch)):
                following.add(state + 1)
        states = closure(following)
        if not states:
            return False
    return True
