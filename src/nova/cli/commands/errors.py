"""How every `nova` command reports a failure: one plain line on stderr and a non-zero exit, never a
traceback. The statuses are `nova.cli.commands.exit_codes`: an error is 1, a refusal (`Refused`) 3. Messages are printed verbatim (they quote things like `pip install 'nova-context-engine[openai]'`).

A closed pipe (`nova sessions export last | head`) is not a failure to report: it passes through to the
command line's own handling, which ends the command quietly (see `nova.cli.main.main`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from nova.cli.commands.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_REFUSED
from nova.errors import NovaError

__all__ = ["Refused", "user_errors"]


class Refused(NovaError):
    """The command would do something it was not allowed to (a headless resume whose recorded folder is
    gone): not a failure of the command, so it exits `EXIT_REFUSED`, not 1. The message names the flag
    that allows it."""


def _say(line: str) -> None:
    # Rich loads only when there is something to say: most runs end without an error.
    from nova.present.terminal import terminal_console

    terminal_console(stderr=True, highlight=False, soft_wrap=True).print(line, markup=False)


@contextmanager
def user_errors(*, exit_code: int = EXIT_ERROR, os_errors: bool = False) -> Iterator[None]:
    """`NovaError` (and, with `os_errors`, an `OSError` that slipped past the storage layer) becomes
    `nova: error: …` and `exit_code`; `Refused` becomes `nova: refused: …` and 3; Ctrl-C becomes
    `nova: interrupted` and 130."""
    try:
        yield
    except Refused as exc:
        _say(f"nova: refused: {exc}")
        raise typer.Exit(EXIT_REFUSED) from None
    except NovaError as exc:
        _say(f"nova: error: {exc}")
        raise typer.Exit(exit_code) from None
    except BrokenPipeError:
        raise  # the reader went away: nothing to say, and nobody to say it to
    except OSError as exc:
        if not os_errors:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _say(f"nova: error: {where}{exc.strerror or exc}")
        raise typer.Exit(exit_code) from None
    except KeyboardInterrupt:
        _say("nova: interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
