"""What particular commands do with their arguments, for the shell parser (nova.tools.policy.shell_parse).

The parser knows the shell's grammar; this module knows commands: which run another command given as
their arguments (`flock FILE CMD`, `taskset MASK CMD`) or as a string (`su -c 'CMD'`, `script -qc 'CMD'`,
`watch CMD`), which run program text the parser cannot read (`python -c`, `perl -e`, `node -e`, awk's
`system()`), which files a command writes (`tee`, `cp`, `sed -i`, `perl -pi`, `ed`, `git checkout --`,
hard links, archives unpacked), which commands only read, and the other spellings of a command's
options (`rm -fr` is `rm -rf`). Every function takes the command's words with quotes removed and its
wrappers peeled (`argv[0]` is the bare command name).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from nova.tools.policy.git_exec import config_key_runs_program

__all__ = [
    "EXTRA_WRAPPERS",
    "ArchiveWrite",
    "command_string",
    "inline_code",
    "operands",
    "option_spellings",
    "options_end",
    "reads_only",
    "written_by",
]

Peeler = Callable[[list[str]], tuple[int, str | None]]


# -- options -----------------------------------------------------------------------------------------
def options_end(argv: list[str], start: int, *, with_value: frozenset[str],
                long_with_value: frozenset[str] = frozenset(), digits: bool = False) -> int:
    """Index of the first operand after `argv[start]`'s options. Short options cluster (`-nv`); one in
    `with_value` takes the rest of its cluster or the next word; `--opt=value` and `--` are understood."""
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if word.startswith("--"):
            i += 1 if "=" in word or word not in long_with_value else 2
            continue
        if word.startswith("-") and len(word) > 1:
            if digits and word[1:].isdigit():  # `nice -10`
                i += 1
                continue
            for j, letter in enumerate(word[1:], start=1):
                if letter in with_value:
                    i += 1 if j < len(word) - 1 else 2
                    break
            else:
                i += 1
            continue
        return i
    return i


def operands(argv: list[str], *, with_value: str = "", long_with_value: tuple[str, ...] = ()) -> list[str]:
    """The non-option words of a command (options may be mixed in, GNU style)."""
    out: list[str] = []
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--":
            out.extend(argv[i + 1:])
            break
        if word.startswith("--"):
            i += 1 if "=" in word or word not in long_with_value else 2
            continue
        if word.startswith("-") and len(word) > 1:
            takes = next((j for j, c in enumerate(word[1:], 1) if c in with_value), None)
            i += 1 if takes is None or takes < len(word) - 1 else 2
            continue
        out.append(word)
        i += 1
    return out


def _short_flags(argv: list[str], end: int) -> str:
    return "".join(w[1:] for w in argv[1:end] if w.startswith("-") and not w.startswith("--"))


# -- commands that run the command in their arguments ------------------------------------------------
def _positional_peeler(with_value: str = "", long_with_value: tuple[str, ...] = (), *, skip: int = 1,
                       stop_flags: str = "", stop_long: tuple[str, ...] = ()) -> Peeler:
    """A wrapper whose options are followed by `skip` operands of its own, then the command (`taskset
    MASK CMD`, `chroot DIR CMD`, `faketime TIME CMD`). A stop flag means there is no command to run
    (`taskset -p PID`), or it is given as a string (`flock -c 'CMD'`, read by `command_string`)."""
    def peel(argv: list[str]) -> tuple[int, str | None]:
        i = options_end(argv, 1, with_value=frozenset(with_value), long_with_value=frozenset(long_with_value))
        flags = _short_flags(argv, i)
        if set(flags) & set(stop_flags) or any(w.split("=", 1)[0] in stop_long for w in argv[1:i]):
            return len(argv) + 1, None
        return i + skip, None

    return peel


def _peel_flock(argv: list[str]) -> tuple[int, str | None]:
    """`flock [OPTIONS] FILE CMD ARGS` runs CMD; `flock FILE -c 'CMD'` hands a string to a shell
    (`command_string` reads it)."""
    if any(w in ("-c", "--command") or w.startswith("--command=") for w in argv[1:]):
        return len(argv) + 1, None
    return _positional_peeler("wE", ("--timeout", "--conflict-exit-code"))(argv)


EXTRA_WRAPPERS: dict[str, Peeler] = {
    "flock": _peel_flock,
    "taskset": _positional_peeler(stop_flags="p", stop_long=("--pid",)),
    "chrt": _positional_peeler(stop_flags="p", stop_long=("--pid",)),
    "chroot": _positional_peeler(long_with_value=("--userspec", "--groups")),
    "faketime": _positional_peeler("f"),
    "unshare": _positional_peeler("SGRwl", ("--setuid", "--setgid", "--root", "--wd"), skip=0),
    "nsenter": _positional_peeler("tSGrw", ("--target", "--setuid", "--setgid", "--root", "--wd"), skip=0),
    "setpriv": _positional_peeler(skip=0),
    "prlimit": _positional_peeler(stop_flags="p", stop_long=("--pid",), skip=0),
    "strace": _positional_peeler("eoOpPsSuEaIbXU", ("--output", "--trace", "--signal", "--user", "--env"), skip=0),
    "ltrace": _positional_peeler("eoOpsuanlLxAD", ("--output", "--user"), skip=0),
    "proxychains": _positional_peeler("f", skip=0),
    "proxychains4": _positional_peeler("f", skip=0),
    "torsocks": _positional_peeler("uPpa", skip=0),
    "systemd-run": _positional_peeler("pEuMHGd", ("--unit", "--property", "--description", "--slice", "--uid",
                                                   "--gid", "--nice", "--working-directory", "--setenv",
                                                   "--on-active", "--on-calendar", "--machine", "--host"), skip=0),
    "busybox": _positional_peeler(stop_long=("--list", "--install"), skip=0),
    "catchsegv": _positional_peeler(skip=0),
    "unbuffer": _positional_peeler(skip=0),
    "pkexec": _positional_peeler(long_with_value=("--user",), skip=0),
    "firejail": _positional_peeler(skip=0),
    "runuser": _positional_peeler("ugG", ("--user", "--group", "--supp-group"), skip=0, stop_flags="cl",
                                  stop_long=("--command", "--login")),
}
"""Wrappers beyond the parser's own list (`env`, `timeout`, `sudo`, ...): peeled the same way."""


def command_string(argv: list[str]) -> tuple[int | None, str | None]:
    """For a command that hands a string to a shell: the index in `argv` of that string (or of the first
    of the words joined into it, for `watch`/`sg`), and None; or None and why what it runs cannot be
    read (`su` without `-c` starts a shell that reads its input). (None, None): not such a command."""
    name = argv[0]
    if name in ("su", "runuser", "script", "flock", "sg"):
        for i, word in enumerate(argv[1:], start=1):
            if word in ("-c", "--command") or (word.startswith("-") and not word.startswith("--")
                                                and word.endswith("c") and name != "sg"):
                return (i + 1, None) if i + 1 < len(argv) else (None, f"{name} -c with no command")
            if word.startswith("--command="):
                return None, f"{name} --command=... is not read here; write it as {name} -c '...'"
        if name == "su" or (name == "runuser" and "-u" not in argv and "--user" not in argv):
            return None, f"{name} without -c starts a shell that reads its input"
        if name == "script":
            return None, "script without -c starts a shell that reads its input"
        if name == "sg":
            return (2, None) if len(argv) > 2 else (None, "sg without a command starts a shell")
        return None, None
    if name == "watch":
        i = options_end(argv, 1, with_value=frozenset("nd"), long_with_value=frozenset({"--interval",
                                                                                          "--differences"}))
        if "x" in _short_flags(argv, i) or "--exec" in argv[1:i]:
            return None, None  # runs its words as a command: peeled like a wrapper would be
        return (i, None) if i < len(argv) else (None, None)
    return None, None


# -- program text the parser cannot read --------------------------------------------------------------
_PYTHON_RE = re.compile(r"^(?:python|pypy)[0-9.]*$")
_PERL_RE = re.compile(r"^perl[0-9.]*$")
_INLINE_FLAGS: dict[str, tuple[str, ...]] = {
    "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"), "nodejs": ("-e", "--eval", "-p", "--print"),
    "bun": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",), "luajit": ("-e",),
    "Rscript": ("-e",), "osascript": ("-e",), "expect": ("-c",), "tclsh": (), "julia": ("-e", "--eval"),
    "pwsh": ("-c", "-Command", "-EncodedCommand"), "powershell": ("-c", "-Command", "-EncodedCommand"),
}
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_AWK_RUNS = re.compile(r"\bsystem\s*\(|\|\s*&?\s*getline|\bprint[f]?\b[^;{}]*[|>]|@load|@include")
_SED_RUNS = re.compile(r"(?:^|[;\n{}])\s*[0-9$,/!~ ]*\s*e(?:\s|$|;)|s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm0-9w]*e")


def inline_code(argv: list[str]) -> str | None:
    """Why the command runs program text the parser cannot check (`python -c`, `perl -e`, awk's
    `system()`, sed's `e`), or a program read from its input (`python -`, `echo … | perl`); else None.
    A program run from a file (`python script.py`) is not flagged: only the sandbox bounds what a
    program does."""
    name = argv[0]
    if _PYTHON_RE.match(name):
        return _python_code(argv)
    if _PERL_RE.match(name):
        i = options_end(argv, 1, with_value=frozenset("eEIMmlx0Cd"))
        if any(w.startswith("-") and not w.startswith("--") and set(w[1:]) & {"e", "E"} for w in argv[1:i]):
            return f"{name} -e runs Perl code the parser cannot check"
        if i >= len(argv) or argv[i] == "-":
            return f"{name} reads its program from its input"
        return None
    if name in _INLINE_FLAGS:
        code_flags = _INLINE_FLAGS[name]
        own = list(itertools.takewhile(lambda w: w.startswith("-"), argv[1:]))  # after a script: its arguments
        used = next((f for f in code_flags for w in own if w == f or (len(f) == 2 and w.startswith(f))), None)
        if used is not None:
            return f"{name} {used} runs code the parser cannot check"
        if name == "deno" or (len(argv) == 1 and name in ("ruby", "node", "nodejs", "php", "lua", "tclsh")):
            return f"{name} reads its program from its input"
        return None
    if name == "deno" and len(argv) > 1 and argv[1] in ("eval", "repl"):
        return f"deno {argv[1]} runs code the parser cannot check"
    if name in _AWKS:
        i = options_end(argv, 1, with_value=frozenset("fvFEi"), long_with_value=frozenset({"--file", "--assign",
                                                                                            "--field-separator"}))
        if any(w.startswith(("-f", "--file", "-E")) for w in argv[1:i]):
            return f"{name} -f runs a program from a file"
        if i < len(argv) and _AWK_RUNS.search(argv[i]):
            return f"{name}'s program runs commands or writes files (system, getline, print |, print >)"
        return None
    if name in ("sed", "gsed"):
        scripts = [argv[j + 1] for j, w in enumerate(argv[:-1]) if w in ("-e", "--expression")]
        if not scripts:
            rest = operands(argv, with_value="efl", long_with_value=("--expression", "--file", "--line-length"))
            scripts = rest[:1]
        if any(_SED_RUNS.search(s) for s in scripts):
            return "sed's `e` command runs a shell command"
    return None


def _python_code(argv: list[str]) -> str | None:
    """Python's own options end at `-c CODE`, `-m MODULE`, a script or `-`: what follows is the program's."""
    name = argv[0]
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "-":
            return f"{name} reads its program from its input"
        if not word.startswith("-") or word == "--":
            return None if word != "--" or i + 1 < len(argv) else f"{name} reads its program from its input"
        if word in ("--version", "--help", "-V", "-VV", "-h", "-?"):
            return None  # prints and exits
        if word.startswith("--"):
            i += 1
            continue
        for j, letter in enumerate(word[1:], start=1):
            if letter == "c":
                return f"{name} -c runs Python code the parser cannot check"
            if letter == "m":
                return None
            if letter in "WXQ":
                i += 0 if j < len(word) - 1 else 1
                break
        i += 1
    return f"{name} reads its program from its input"


# -- writes ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ArchiveWrite:
    """An archive unpacked: the files it holds are written under `into` (the names are in the archive,
    read by the permission policy when it checks protected paths)."""

    archive: str
    into: str
    kind: str
    """"zip" or "tar"."""


def _target_dir(argv: list[str]) -> str | None:
    for i, word in enumerate(argv):
        if word == "-t" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--target-directory="):
            return word.split("=", 1)[1]
        if word.startswith("-t") and not word.startswith("--") and len(word) > 2:
            return word[2:]
    return None


_EDITORS = frozenset({"ed", "red", "ex", "vi", "vim", "nvim", "view", "nano", "pico", "emacs", "joe", "mcedit"})


def written_by(argv: list[str]) -> tuple[list[str], list[str], list[ArchiveWrite]]:
    """What the command (bare, wrappers peeled) writes, as far as its arguments show: the paths it
    writes, and why it also writes files its arguments do not name (`git apply` writes the files named
    in the patch), and the archives it unpacks."""
    name = argv[0]
    if name == "tee":
        return operands(argv, with_value="", long_with_value=("--output-error",)), [], []
    if name in ("cp", "install", "ln", "link"):
        target = _target_dir(argv)
        found = operands(argv, with_value="tSmogZ" if name == "install" else "tS",
                         long_with_value=("--suffix", "--target-directory", "--mode", "--owner", "--group"))
        if name == "link" or (name == "ln" and "s" not in _short_flags(argv, len(argv)) and "--symbolic" not in argv):
            # A hard link is a second name for the same file: writing through it changes the first.
            return [*found, *([target] if target else [])], [], []
        if target is not None:
            return [target], [], []
        return (found[-1:] if len(found) >= 2 or name == "install" else []), [], []
    if name == "mv":  # the sources are removed, the destination replaced
        target = _target_dir(argv)
        return [*operands(argv, with_value="tS", long_with_value=("--suffix", "--target-directory")),
                *([target] if target else [])], [], []
    if name in ("rm", "rmdir", "unlink", "touch", "mkdir", "shred", "mkfifo", "mknod"):
        return operands(argv, with_value="mrdtn" if name in ("touch", "mkdir", "mkfifo", "mknod", "shred") else "",
                        long_with_value=("--mode", "--reference", "--date", "--iterations", "--size")), [], []
    if name == "truncate":
        return operands(argv, with_value="sr", long_with_value=("--size", "--reference")), [], []
    if name in ("chmod", "chown", "chgrp", "chattr", "setfacl"):
        found = operands(argv)
        reference = any(w.startswith("--reference") for w in argv)
        return (found if reference else found[1:]), [], []
    if name == "dd":
        return [w[3:] for w in argv[1:] if w.startswith("of=")], [], []
    if name in ("sed", "gsed"):
        in_place = any(w == "--in-place" or w.startswith("--in-place=")
                       or (w.startswith("-") and not w.startswith("--") and "i" in w) for w in argv[1:])
        if not in_place:
            return [], [], []
        found = operands(argv, with_value="efl", long_with_value=("--expression", "--file", "--line-length"))
        has_script_option = any(w in ("-e", "-f") or w.startswith(("--expression", "--file"))
                                or (w.startswith("-") and not w.startswith("--") and w[-1] in "ef")
                                for w in argv[1:])
        return (found if has_script_option else found[1:]), [], []
    if _PERL_RE.match(name) or name == "ruby":
        i = options_end(argv, 1, with_value=frozenset("eEIMmlx0Cd"))
        if not any(w.startswith("-") and not w.startswith("--") and "i" in w[1:] for w in argv[1:i]):
            return [], [], []
        has_code = any(w.startswith("-") and not w.startswith("--") and set(w[1:]) & {"e", "E"} for w in argv[1:i])
        rest = argv[i:]
        return (rest if has_code else rest[1:]), [], []
    if name in _AWKS and any(w in ("-i", "--include") for w in argv) and "inplace" in argv:
        found = operands(argv, with_value="fvFEi", long_with_value=("--file", "--assign", "--include"))
        return found[1:], [], []
    if name in _EDITORS:
        # Editors' option values (`-c CMD`, `-u FILE`) differ per editor: every word but an option may be
        # a file it writes, which only ever checks more.
        return [w for w in argv[1:] if not w.startswith(("-", "+"))], [], []
    if name in ("sort", "tree"):
        found = [argv[j + 1] for j, w in enumerate(argv[:-1]) if w == "-o"]
        found += [w[2:] for w in argv[1:] if w.startswith("-o") and len(w) > 2]
        found += [w.split("=", 1)[1] for w in argv[1:] if w.startswith("--output=")]
        return found, [], []
    if name == "find":
        starts = []
        for word in argv[1:]:
            if word.startswith(("-", "(", "!")):
                break
            starts.append(word)
        writes = [argv[j + 1] for j, w in enumerate(argv[:-1]) if w in ("-fprint", "-fprint0", "-fls", "-fprintf")]
        if "-delete" in argv:
            writes += starts or ["."]
        return writes, [], []
    if name == "rsync":
        found = operands(argv, with_value="efBTM", long_with_value=("--rsh", "--exclude", "--include", "--filter"))
        return found[-1:] if len(found) >= 2 else [], [], []
    if name in ("unzip", "bsdtar") or (name == "tar" and _tar_extracts(argv)):
        return _unpacks(argv)
    if name == "patch":
        found = operands(argv, with_value="pidDFrozBVY", long_with_value=("--input", "--directory", "--output"))
        return found[:1], ([] if found else ["patch writes the files the patch names"]), []
    if name == "git":
        sub = argv[1] if len(argv) > 1 else ""
        if sub in ("checkout", "restore"):  # `git checkout REV -- NOVA.md` writes NOVA.md
            paths = argv[argv.index("--") + 1:] if "--" in argv else [w for w in argv[2:] if not w.startswith("-")]
            return paths, [], []
        if sub == "config":
            return _git_config_writes(argv), [], []
    return [], [], []


def _tar_extracts(argv: list[str]) -> bool:
    if len(argv) < 2:
        return False
    first = argv[1]
    if not first.startswith("-") and "x" in first:  # `tar xzf a.tgz`
        return True
    return any(w in ("--extract", "--get") or (w.startswith("-") and not w.startswith("--") and "x" in w)
               for w in argv[1:])


def _unpacks(argv: list[str]) -> tuple[list[str], list[str], list[ArchiveWrite]]:
    name = argv[0]
    if name == "unzip":
        if any(w in ("-l", "-v", "-t", "-Z", "-p", "-c") for w in argv[1:]):
            return [], [], []  # lists, tests or prints to stdout
        into = next((argv[j + 1] for j, w in enumerate(argv[:-1]) if w == "-d"), ".")
        found = operands(argv, with_value="dxP")
        if not found:
            return [], [], []
        return [], [], [ArchiveWrite(archive=found[0], into=into, kind="zip")]
    into = next((argv[j + 1] for j, w in enumerate(argv[:-1]) if w in ("-C", "--directory")), ".")
    into = next((w.split("=", 1)[1] for w in argv if w.startswith("--directory=")), into)
    archive = next((argv[j + 1] for j, w in enumerate(argv[:-1]) if w in ("-f", "--file")), None)
    if archive is None:
        archive = next((w.split("=", 1)[1] for w in argv if w.startswith("--file=")), None)
    if archive is None:  # `tar xzf a.tgz` / `tar -xzf a.tgz`: the f takes the next word
        for j, w in enumerate(argv[1:], start=1):
            if not w.startswith("--") and "f" in w.lstrip("-") and j + 1 < len(argv):
                archive = argv[j + 1]
                break
    if archive is None or archive == "-":
        return [], [f"{name} unpacks an archive read from its input"], []
    return [], [], [ArchiveWrite(archive=archive, into=into, kind="tar")]


def _git_config_writes(argv: list[str]) -> list[str]:
    """`git config KEY VALUE` writing a key git runs as a program writes the repository's config (or
    the user's, with --global): the place such a key is refused from."""
    reading = ("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch", "--show-origin", "get", "list")
    if any(w in reading for w in argv[2:]):
        return []
    words = [w for w in argv[2:] if not w.startswith("-")]
    if len(words) >= 2 and words[0] == "set":
        words = words[1:]
    if len(words) < 2 or not config_key_runs_program(words[0]):
        return []
    if "--global" in argv:
        return ["~/.gitconfig"]
    file = next((argv[j + 1] for j, w in enumerate(argv[:-1]) if w in ("-f", "--file")), None)
    return [file or ".git/config"]


# -- commands that only read -----------------------------------------------------------------------------
_READ_ONLY = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "pwd", "echo", "printf", "true",
    "false", "test", "[", "[[", "which", "type", "file", "stat", "du", "df", "tree", "uniq", "cut", "tr", "jq",
    "diff", "cmp", "comm", "basename", "dirname", "realpath", "readlink", "date", "whoami", "id", "uname",
    "printenv", "hostname", "nl", "od", "xxd", "hexdump", "md5sum", "sha1sum", "sha256sum", "sha512sum",
    "less", "more", "cd", "pushd", "popd", "env", "column", "fold", "rev", "seq", "expr", "sleep", "wait",
    "ps", "uptime", "locale", "getconf", "tac", "strings", "sort", "find", "paste", "join", "fmt", "look",
    "lsof", "free", "nproc", "arch", "tty", "groups", "cal", "yes",
})
_READ_ONLY_GIT = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame", "describe", "shortlog",
    "grep", "cat-file", "rev-list", "whatchanged", "name-rev", "merge-base", "check-ignore", "count-objects",
    "version", "help", "diff-tree", "diff-files", "diff-index", "for-each-ref", "show-ref", "var",
})


def reads_only(argv: list[str]) -> bool:
    """Whether the command (bare) only reads: a short list of commands that never write or run others
    (`ls`, `cat`, `grep`, `git status`, `git log`...), with the options that would write left out
    (`sort -o`, `find -delete`, `git diff --output`)."""
    if not argv:
        return False
    name = argv[0]
    if name == "git":
        sub = argv[1] if len(argv) > 1 else ""
        if sub in ("branch", "tag", "remote", "stash"):
            rest = argv[2:]
            listing = {"branch": {"-a", "-r", "-v", "-vv", "--list", "-l", "--all", "--show-current"},
                       "tag": {"-l", "--list"}, "remote": {"-v", "show", "get-url"}, "stash": {"list", "show"}}[sub]
            return all(w in listing for w in rest) and (sub != "stash" or bool(rest))
        if sub == "config":
            return any(w in ("--get", "--get-all", "--list", "-l", "--get-regexp", "get", "list") for w in argv[2:])
        return sub in _READ_ONLY_GIT and not any(w.startswith("--output") for w in argv)
    if name not in _READ_ONLY:
        return False
    if name in ("sort", "tree") and any(w == "-o" or w.startswith(("-o", "--output")) for w in argv[1:]):
        return False
    if name == "find" and any(w in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0",
                                    "-fls", "-fprintf") for w in argv):
        return False
    return not (name == "env" and len(argv) > 1)


# -- other spellings of a command's options ----------------------------------------------------------------
_LONG_AS_SHORT: dict[str, dict[str, str]] = {
    "rm": {"--recursive": "r", "--force": "f", "--dir": "d", "-R": "r", "--verbose": "v", "--interactive": "i"},
    "cp": {"--recursive": "r", "--force": "f", "-R": "r"},
    "chmod": {"--recursive": "R"},
    "chown": {"--recursive": "R"},
}
MAX_PERMUTED_FLAGS = 4


_SINGLE_DASH_LONG = frozenset({"find", "tar", "ps", "dd", "java", "go", "gcc", "cc", "clang", "g++", "xargs",
                               "ffmpeg", "convert", "magick", "openssl", "test", "["})
"""Commands whose `-word` options are words, not clusters of letters."""


def option_spellings(argv: list[str]) -> list[str]:
    """The command with its short options gathered into one cluster right after the name (after git's
    subcommand), in every order (up to `MAX_PERMUTED_FLAGS` letters), so a deny rule written `rm -rf*`
    also matches `rm -fr`, `rm -r -f`, `rm -Rf`, `rm --recursive --force` and `rm x -rf`, and one written
    `git push -f*` matches `git push origin -f`. Empty when there are no options to gather."""
    name = argv[0]
    if name in _SINGLE_DASH_LONG:
        return []
    head = 2 if name == "git" and len(argv) > 1 and not argv[1].startswith("-") else 1
    table = _LONG_AS_SHORT.get(name, {})
    letters: list[str] = []
    rest: list[str] = []
    for i, word in enumerate(argv[head:], start=head):
        if word == "--":
            rest.extend(argv[i:])
            break
        if word in table:
            letters.append(table[word])
        elif word.startswith("-") and not word.startswith("--") and 1 < len(word) <= MAX_PERMUTED_FLAGS + 1 \
                and word[1:].isalpha():
            letters.extend(table.get(f"-{c}", c) for c in word[1:])
        else:
            rest.append(word)
    distinct = list(dict.fromkeys(letters))
    if not distinct or len(distinct) > MAX_PERMUTED_FLAGS:
        return []
    tail = (" " + " ".join(rest)) if rest else ""
    command = " ".join(argv[:head])
    return [f"{command} -{''.join(order)}{tail}" for order in itertools.permutations(distinct)]
