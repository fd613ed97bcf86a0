"""The check every `nova` command that changes Nova's own controls makes first: that a person started it,
not a command the model ran (nova.tools.policy.controls explains how it tells)."""

from __future__ import annotations

import os

from nova.cli.commands.errors import Refused
from nova.settings import nova_home
from nova.tools.policy.controls import FromATool, require_person

__all__ = ["person_only"]


def person_only(action: str) -> None:
    """Raise `Refused` (one line, exit 3: a refusal, not a failure) when `action` was started below a Nova
    tool working on this command's Nova home."""
    try:
        require_person(action, nova_home(dict(os.environ)))
    except FromATool as exc:
        raise Refused(str(exc)) from None
