"""Nova's built-in tools and the registry a session starts with.

Every built-in tool checks its arguments against its own schema and answers a bad call with an error
result naming the bad key, so a model's mistake costs it one turn, never the session. Whether a call
may run at all is decided before `run` by `nova.tools.permissions`.
"""

from __future__ import annotations

from pathlib import Path

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


def default_registry(*, sandbox: Sandbox | None = None, home: Path | None = None) -> ToolRegistry:
    """A fresh registry with the six built-in tools (a new one each call, so adding tools to one
    session's registry never leaks into another's); `bash` runs its commands in `sandbox` when given,
    marked as run for Nova home `home` (nova.tools.policy.controls)."""
    return ToolRegistry(
        [ReadFileTool(), WriteFileTool(), EditFileTool(), BashTool(sandbox=sandbox, home=home), GrepTool(), GlobTool()]
    )
