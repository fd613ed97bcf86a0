"""Nova: a context engine and agent harness for LLM coding agents.

What an embedding program needs, in one place (docs/api.md shows it at work):

    from nova import AgentOptions, build_agent, load_settings, make_provider

    settings = load_settings()
    agent = build_agent(settings, make_provider(settings, os.environ), AgentOptions(cwd=project))
    result = agent.run_turn("Why does the test suite fail?")

The names in `__all__` are the public API and keep their meaning from one release to the next; every
module behind them may move. Each name loads from its module on first use, so `import nova.messages`
or `nova --help` does not pay for the agent, the providers or the context engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nova.lazy import lazy_exports
from nova.version import __version__

if TYPE_CHECKING:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.agent.loop import Agent
    from nova.agent.provider_factory import make_provider
    from nova.context.extensions import Extension, TurnResult
    from nova.errors import NovaError
    from nova.evaluation.replay import ReplayReport, replay_messages
    from nova.messages import Message
    from nova.sessions.importers import read_session_file
    from nova.sessions.session import Session
    from nova.settings import Settings, load_settings

_HOMES = {
    "nova.agent.builder": ("AgentOptions", "build_agent"),
    "nova.agent.loop": ("Agent",),
    "nova.agent.provider_factory": ("make_provider",),
    "nova.context.extensions": ("Extension", "TurnResult"),
    "nova.errors": ("NovaError",),
    "nova.evaluation.replay": ("ReplayReport", "replay_messages"),
    "nova.messages": ("Message",),
    "nova.sessions.importers": ("read_session_file",),
    "nova.sessions.session": ("Session",),
    "nova.settings": ("Settings", "load_settings"),
}

__all__ = [
    "Agent",
    "AgentOptions",
    "Extension",
    "Message",
    "NovaError",
    "ReplayReport",
    "Session",
    "Settings",
    "TurnResult",
    "__version__",
    "build_agent",
    "load_settings",
    "make_provider",
    "read_session_file",
    "replay_messages",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
