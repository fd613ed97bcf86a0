"""How every `nova` command reports a failure: one plain line on stderr and a non-zero exit, never a
traceback. Messages are printed verbatim (they quote things like `pip install 'nova-agent[openai]'`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from nova.errors import NovaError

__all__ = ["user_errors"]

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def user_errors(*, exit_code: int = 2, os_errors: bool = False) -> Iterator[None]:
    """`NovaError` (and, with `os_errors`, an `OSError` that slipped past the storage layer) becomes
    `nova: error: …` and `exit_code`; Ctrl-C becomes `nova: interrupted` and 130."""
    try:
        yield
    except NovaError as exc:
        _stderr.print(f"nova: error: {exc}", markup=False)
        raise typer.Exit(exit_code) from None
    except OSError as exc:
        if not os_errors:
            raise
        _stderr.print(f"nova: error: {exc.filename or ''}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(exit_code) from None
    except KeyboardInterrupt:
        _stderr.print("nova: interrupted", markup=False)
        raise typer.Exit(130) from None
