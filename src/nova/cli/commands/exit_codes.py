"""The exit statuses of every `nova` command, in one place: docs/cli.md prints the same table (a test
holds the two together), and `nova --help` points at it.

A script tells the four outcomes apart without reading stderr: a usage error is fixed by changing the
command line, an error by fixing its cause (a key, a file, a server), a refusal by allowing what was
refused (`--allow`, `--yes`, `--cwd`), and 130 is the shell's convention for Ctrl-C (128 + SIGINT).
"""

from __future__ import annotations

__all__ = ["EXIT_CODES", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INTERRUPTED = 130

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done",
    EXIT_ERROR: "error: the command could not do its work (no API key, a provider or storage error, an unknown "
                "session, a damaged config file); the line on stderr says what and what to do",
    EXIT_USAGE: "usage error: the command line is wrong (an unknown option, a missing argument, a value out of "
                "range, `--cwd` naming a folder that does not exist)",
    EXIT_REFUSED: "refused: the work was not done because something was not allowed (a tool call the rules or "
                  "a headless run refused, a resume whose recorded folder is gone, a command that changes Nova's "
                  "controls started by the model)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); `nova run` and `nova resume` say how to resume the session they kept",
}
