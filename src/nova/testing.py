"""Test support: deterministic providers, a clock that does not sleep, the guard against real requests,
and the shared real data.

Production code never imports this module; the fakes and the guard live in `nova.providers.scripted`,
`nova.agent.clock` and `nova.providers.guard` and are gathered here for tests and for users testing
their own agents.
"""

from __future__ import annotations

import os
from pathlib import Path

from nova.agent.clock import InstantClock
from nova.messages import Message
from nova.model import ModelRequest
from nova.providers.guard import RealModelRequestError, check_real_request_allowed, forbid_model_requests
from nova.providers.scripted import (
    FunctionProvider,
    ScriptedProvider,
    ScriptExhausted,
    call,
    message_of,
    reply,
    rough_request_tokens,
)

__all__ = [
    "FunctionProvider",
    "InstantClock",
    "RealModelRequestError",
    "ScriptExhausted",
    "ScriptedProvider",
    "call",
    "check_real_request_allowed",
    "forbid_model_requests",
    "last_message",
    "message_of",
    "mini_swe_trajectories",
    "reply",
    "rough_request_tokens",
    "shared_data_dir",
    "shared_recordings",
]


def shared_data_dir() -> Path:
    """The project's shared real data: `$NOVA_SHARED_DATA`, else `../shared/data` beside the checkout."""
    env = os.environ.get("NOVA_SHARED_DATA")
    if env:
        return Path(env)
    candidates = [Path.cwd().parent / "shared" / "data", Path(__file__).resolve().parents[3] / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def shared_recordings(root: Path | None = None, *, trajectories: bool = True) -> list[Path]:
    """Every recording in the shared data (`root`, else `shared_data_dir()`), sorted: the sessions under
    sessions/ as `nova sessions import FOLDER` finds them (a Cline task folder is its conversation file,
    not its UI log and metadata; `task_file`), and with `trajectories` the runs under trajectories/."""
    from nova.sessions.readers import task_file
    from nova.sessions.readers.discover import folder_sessions

    root = shared_data_dir() if root is None else root
    found = [task_file(p) for p in folder_sessions(root / "sessions")] if (root / "sessions").is_dir() else []
    if trajectories:
        found += [*root.glob("trajectories/**/*.traj"), *root.glob("trajectories/**/*.traj.json")]
    return sorted(p for p in found if p.is_file())


def mini_swe_trajectories() -> list[Path]:
    """The 20 real mini-swe-agent runs in the shared data, sorted by name (empty when absent)."""
    return sorted((shared_data_dir() / "trajectories" / "mini-swe-agent-gemini3").glob("*.traj.json"))


def last_message(request: ModelRequest) -> Message:
    """The newest message `request` sends, not counting the observations block (task state, environment)
    the context compiler puts after it: the tool results or the user's words a scripted model answers."""
    return next(m for m in reversed(request.messages) if m.origin != "context")
