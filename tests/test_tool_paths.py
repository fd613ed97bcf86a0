"""The declared map of tools that read and write files, across agents, and the path filter."""

from __future__ import annotations

import pytest

from nova.history.tool_paths import ToolPaths, looks_like_path, paths_of
from nova.messages import ToolUsePart


def _call(name: str, **args: object) -> ToolUsePart:
    return ToolUsePart(id="c", name=name, input=args)


@pytest.mark.parametrize(("call", "expected"), [
    (_call("Edit", file_path="/repo/app.py", old_string="a", new_string="b"), ToolPaths(writes=("/repo/app.py",))),
    (_call("MultiEdit", file_path="src/x.ts", edits=[]), ToolPaths(writes=("src/x.ts",))),
    (_call("Write", file_path="JOKE.md", content="hi"), ToolPaths(writes=("JOKE.md",))),
    (_call("NotebookEdit", notebook_path="a.ipynb"), ToolPaths(writes=("a.ipynb",))),
    (_call("Read", file_path="/repo/README.md"), ToolPaths(reads=("/repo/README.md",))),
    (_call("write", filePath="/w/JOKE.md", content=""), ToolPaths(writes=("/w/JOKE.md",))),
    (_call("write_to_file", path="a.py", content=""), ToolPaths(writes=("a.py",))),
    (_call("str_replace_editor", command="view", path="/testbed/a.py"), ToolPaths(reads=("/testbed/a.py",))),
    (_call("str_replace_editor", command="str_replace", path="/testbed/a.py"), ToolPaths(writes=("/testbed/a.py",))),
    (_call("apply_patch", input="*** Begin Patch\n*** Update File: /w/JOKE.md\n@@\n-a\n+b\n*** Add File: b.txt\n"),
     ToolPaths(writes=("/w/JOKE.md", "b.txt"))),
    (_call("bash", command="sed -i 's/a/b/' src/x.py && cat README.md"),
     ToolPaths(reads=("README.md",), writes=("src/x.py",))),
    (_call("exec_command", cmd="echo hi > out.txt; echo more >> ./log/run.log"),
     ToolPaths(writes=("out.txt", "./log/run.log"))),
    (_call("bash", command="cat a.py | tee b.py"), ToolPaths(reads=("a.py",), writes=("b.py",))),
    (_call("bash", command="mv old.py new.py && cp src.cfg dst.cfg && rm junk.txt"),
     ToolPaths(reads=("src.cfg",), writes=("old.py", "new.py", "dst.cfg", "junk.txt"))),
    (_call("bash", command="ls -la 2>&1 | grep foo"), ToolPaths()),
])
def test_paths_of(call: ToolUsePart, expected: ToolPaths) -> None:
    assert paths_of(call) == expected


def test_declared_mcp_writer_and_case_insensitive_names() -> None:
    call = _call("mcp__fs__Save", target="notes/todo.md")
    assert paths_of(call) == ToolPaths()
    assert paths_of(call, writers={"mcp__fs__save": ("target",)}) == ToolPaths(writes=("notes/todo.md",))


@pytest.mark.parametrize("token", ["open/closed", "tool_call/2", "and/or", "http://x.io/a.py", "-rf", "1.2.3", ""])
def test_prose_is_not_a_path(token: str) -> None:
    assert not looks_like_path(token)


@pytest.mark.parametrize("token", ["a.py", "src/nova/x.py", "/etc/hosts", "./run", "~/notes", "Makefile.am"])
def test_paths_look_like_paths(token: str) -> None:
    assert looks_like_path(token)


@pytest.mark.parametrize(("command", "written"), [
    ("python3 - <<'EOF'\np = 'astropy/io/fits/card.py'\ns = open(p).read()\nopen(p, 'w').write(s)\nEOF",
     ("astropy/io/fits/card.py",)),
    ("python -c \"open('django/db/models/query.py','w').write('x')\"", ("django/db/models/query.py",)),
    ("python - <<'EOF'\nfrom pathlib import Path\nPath('lib/a.py').write_text('x')\nEOF", ("lib/a.py",)),
    ("git apply <<'EOF'\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\nEOF", ("src/x.py",)),
    ("grep -n 'open(' src/x.py", ()),
    ("python - <<'EOF'\nprint(open('setup.cfg').read())\nEOF", ()),
])
def test_a_script_inside_the_command_writes_what_it_opens_for_writing(command: str, written: tuple[str, ...]) -> None:
    # Agents rewrite a file with a heredoc script when sed is too awkward; the file is changed all the same.
    assert paths_of(ToolUsePart("t", "bash", {"command": command})).writes == written
