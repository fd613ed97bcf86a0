"""Where a resumed session runs: in the folder it was recorded in, not wherever the shell happens to be.

A session's tools read and edit paths relative to its working directory; resumed from another folder
they would glob, read and edit the wrong tree. So `nova resume` and `nova run --resume` run in the
recorded folder (`SessionMeta.cwd`), and `--cwd DIR` overrides it. When the two differ:

- `nova resume` with stdin on a terminal asks, naming both folders (Enter keeps the recorded one);
- without a terminal, and always for `nova run --resume` (the scripting command), the recorded folder is
  used and a note says so; if it no longer exists the resume is refused (`Refused`, exit 3) with a
  message naming it and `--cwd DIR`.

A session recorded without a folder (an import that did not say, a record older than the field) runs in
the shell's folder, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nova.cli.commands.errors import Refused

__all__ = ["Ask", "recorded_cwd", "resume_workdir"]

Ask = Callable[[str], str]
"""Shows a question (several lines) and returns the line typed in answer."""


def recorded_cwd(home: Path, session_id: str) -> str:
    """The folder `session_id` was recorded in, or "" when its meta.json does not say (or cannot be read:
    opening the session reports that)."""
    from nova.sessions.meta import read_meta_or_damage, session_dir

    meta, _damage = read_meta_or_damage(session_dir(home, session_id))
    return meta.cwd if meta is not None else ""


def resume_workdir(session_id: str, recorded: str, *, here: Path, ask: Ask | None,
                   note: Callable[[str], None]) -> Path:
    """The folder to resume `session_id` in. `here` is the shell's folder; `ask` is None when nobody can
    be asked (no terminal, `nova run --resume`). `note` tells a headless run where it went."""
    here = here.resolve()
    if not recorded:
        return here
    place = Path(recorded).expanduser()
    exists = place.is_dir()
    if exists and place.resolve() == here:
        return here
    if ask is None:
        if not exists:
            raise Refused(f"session {session_id} was recorded in {place}, which no longer exists; pass "
                          f"--cwd DIR to resume it in another folder (--cwd {here} for this one)")
        note(f"nova: resuming session {session_id} in {place}, the folder it was recorded in (you are in "
             f"{here}; pass --cwd DIR to run elsewhere)")
        return place.resolve()
    if exists:
        answer = ask(f"Session {session_id} was recorded in {place}\nbut you are in {here}.\n"
                     f"  [Enter] resume in {place}   [h] resume here, in {here}   [q] quit\n> ")
        choice = answer.strip().lower()[:1]
        if choice in ("", "r"):
            return place.resolve()
    else:
        answer = ask(f"Session {session_id} was recorded in {place}, which no longer exists;\n"
                     f"you are in {here}.\n  [h] resume here, in {here}   [Enter] or [q] quit\n> ")
        choice = answer.strip().lower()[:1]
    if choice == "h":
        return here
    raise Refused(f"session {session_id} not resumed (recorded in {place}; pass --cwd DIR to choose the folder "
                  "without being asked)")


def terminal_ask(prompt: str) -> str:
    """Asks on stderr (stdout may be a pipe for --json) and reads one line; end of input quits."""
    import sys

    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line if line else "q"
