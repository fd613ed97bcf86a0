"""Asking at the terminal during `nova run`: what the call does, then one key, no Enter.

    ? approve bash: git push origin main
      asked because: the ask rule `bash(git push*)` matches
      [y] allow once  [a] allow for this session (every call the rule `bash(git push*)` asks about)  [n] deny

An edit or a write shows the unified diff it would make under the first line (nova.tools.change_preview).
`y` allows this call, `a` allows it and the rest the same rule (or tool) asks about in this run, `n`,
Escape, Ctrl-C or Ctrl-D (end of input) deny. Other keys are ignored. The key is read with the
terminal in cbreak mode and put back as it was; when stdin is not a terminal that can be switched
(a pipe given to a forced-interactive run) one line is read instead and its first letter counts.

`nova run` asks only when stdin and stdout are both terminals; a script (either one redirected) gets
the headless policy: `--yes` / `--allow TOOL`, or a refusal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO

from rich.console import Console
from rich.markup import escape

from nova.present.diff_text import diff_text
from nova.present.text import terminal_safe
from nova.tools.approval import Answer, RememberingApprover, SessionGrants
from nova.tools.permissions import PermissionRequest

__all__ = ["KEYS", "TerminalPrompt", "is_interactive_terminal", "terminal_approver"]

KEYS: dict[str, Answer] = {"y": Answer.ONCE, "a": Answer.SESSION, "n": Answer.DENY,
                           "\x1b": Answer.DENY, "\x03": Answer.DENY, "\x04": Answer.DENY}
_SHOWN = {Answer.ONCE: "[green]allowed once[/]", Answer.SESSION: "[green]allowed for this session[/]",
          Answer.DENY: "[red]denied[/]"}


def is_interactive_terminal(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> bool:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        return stdin.isatty() and stdout.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream is not a terminal
        return False


@contextlib.contextmanager
def _cbreak(fd: int) -> Iterator[bool]:
    """The terminal in cbreak mode (keys arrive one by one, unechoed; pending input is flushed); False
    when it cannot be."""
    if fd < 0:
        yield False
        return
    try:
        import termios
        import tty

        saved = termios.tcgetattr(fd)
    except (ImportError, OSError):  # termios.error is an OSError subclass on every supported Python
        yield False
        return
    try:
        tty.setcbreak(fd)
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class TerminalPrompt:
    """Shows one request on `console` and reads the answer from `stdin`."""

    def __init__(self, console: Console, *, stdin: IO[str] | None = None,
                 describe_grant: Callable[[PermissionRequest], str] | None = None) -> None:
        self.console = console
        self.stdin = stdin or sys.stdin
        self.describe_grant = describe_grant or SessionGrants().describe

    def __call__(self, request: PermissionRequest) -> Answer:
        try:
            fd = self.stdin.fileno()
        except (AttributeError, OSError, ValueError):
            fd = -1
        # Keys typed before the prompt shows are dropped (cbreak is set with a flush, first): a stray
        # key pressed earlier must not answer a question the person has not seen.
        with _cbreak(fd) as keyed:
            self._show(request)
            try:
                answer = self._read_key(fd) if keyed else self._read_line()
            except KeyboardInterrupt:
                answer = Answer.DENY
        self.console.print(f"→ {_SHOWN[answer]}")
        return answer

    def _show(self, request: PermissionRequest) -> None:
        c = self.console
        # The command is the model's: shown as text, so an escape sequence in it cannot hide what runs.
        c.print(f"  [bold yellow]? approve[/] {escape(terminal_safe(request.summary))}", soft_wrap=True)
        if request.diff:
            c.print(diff_text(request.diff, indent="    "), end="", soft_wrap=True)
        c.print(f"    [dim]asked because: {escape(terminal_safe(request.reason))}[/]", soft_wrap=True)
        c.print(f"    [bold]\\[y][/] allow once  [bold]\\[a][/] allow for this session "
                f"({escape(self.describe_grant(request))})  [bold]\\[n][/] deny ", end="", soft_wrap=True)

    @staticmethod
    def _read_key(fd: int) -> Answer:
        while True:
            data = os.read(fd, 32)
            if not data:
                return Answer.DENY
            answer = KEYS.get(data[:1].decode("latin-1").lower())
            if answer is not None:
                return answer

    def _read_line(self) -> Answer:
        line = self.stdin.readline()
        return KEYS.get(line.strip()[:1].lower(), Answer.DENY) if line else Answer.DENY


def terminal_approver(console: Console, *, stdin: IO[str] | None = None) -> RememberingApprover:
    """The approver of one `nova run`: the prompt above, with this run's session grants."""
    grants = SessionGrants()
    return RememberingApprover(TerminalPrompt(console, stdin=stdin, describe_grant=grants.describe), grants)
