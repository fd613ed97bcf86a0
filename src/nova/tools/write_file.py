"""`write_file`: create or overwrite a file with the given text, atomically."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nova.errors import ToolError
from nova.tools._common import BuiltinTool, atomic_write_text, display_path, resolve_path
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput

__all__ = ["WriteFileTool"]


class WriteFileTool(BuiltinTool):
    name = "write_file"
    read_only = False
    description = (
        "Create a file, or replace a file's whole content, with `content`. Missing parent directories are "
        "created. The write is atomic: the file is either the old or the new version, never half "
        "written. To change part of an existing file prefer `edit_file`, which does not need the whole "
        "file repeated."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "path": param("string", "File to write, relative to the working directory or absolute."),
        "content": param("string", "The complete new content of the file, exactly as it should be on disk."),
    }, required=["path", "content"])

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = resolve_path(ctx, args["path"])
        content: str = args["content"]
        shown = display_path(ctx, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path inside it.")
        existed = path.exists()
        atomic_write_text(path, content)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        size = len(content.encode("utf-8"))
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(
            content=f"{verb} {shown} ({lines} lines, {size} bytes).",
            metadata={"paths_written": [str(path)], "created": not existed, "bytes": size},
        )
