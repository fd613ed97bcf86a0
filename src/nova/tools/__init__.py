"""Nova's built-in tools and the registry a session starts with.

Every built-in tool checks its arguments against its own schema and answers a bad call with an error
result naming the bad key, so a model's mistake costs it one turn, never the session. Whether a call
may run at all is decided before `run` by `nova.tools.permissions`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nova.tools.base import Tool, ToolContext, ToolOutput, ToolRegistry
    from nova.tools.bash import BashTool
    from nova.tools.edit_file import EditFileTool
    from nova.tools.glob_files import GlobTool
    from nova.tools.grep import GrepTool
    from nova.tools.policy.sandbox import Sandbox
    from nova.tools.read_file import ReadFileTool
    from nova.tools.write_file import WriteFileTool

__all__ = [
    "BashTool",
    "EditFileTool",
    "GlobTool",
    "GrepTool",
    "ReadFileTool",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "WriteFileTool",
    "default_registry",
]

# Where each name lives, imported on its first use: every `nova` command checks whether a Nova tool ran it
# (`nova.tools.policy.controls`), and loading every tool for that was half of `nova --help`'s start.
_HOMES = {
    "Tool": "nova.tools.base", "ToolContext": "nova.tools.base", "ToolOutput": "nova.tools.base",
    "ToolRegistry": "nova.tools.base", "BashTool": "nova.tools.bash", "EditFileTool": "nova.tools.edit_file",
    "GlobTool": "nova.tools.glob_files", "GrepTool": "nova.tools.grep", "ReadFileTool": "nova.tools.read_file",
    "WriteFileTool": "nova.tools.write_file",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'nova.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def default_registry(*, sandbox: Sandbox | None = None, home: Path | None = None) -> ToolRegistry:
    """A fresh registry with the six built-in tools (a new one each call, so adding tools to one
    session's registry never leaks into another's); `bash` runs its commands in `sandbox` when given,
    marked as run for Nova home `home` (nova.tools.policy.controls)."""
    from nova.tools.base import ToolRegistry
    from nova.tools.bash import BashTool
    from nova.tools.edit_file import EditFileTool
    from nova.tools.glob_files import GlobTool
    from nova.tools.grep import GrepTool
    from nova.tools.read_file import ReadFileTool
    from nova.tools.write_file import WriteFileTool

    return ToolRegistry(
        [ReadFileTool(), WriteFileTool(), EditFileTool(), BashTool(sandbox=sandbox, home=home), GrepTool(), GlobTool()]
    )
