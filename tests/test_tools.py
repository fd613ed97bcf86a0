"""Built-in tools against real files in tmp_path and real subprocesses."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nova.tools import ToolContext, ToolOutput, default_registry
from nova.tools._schema import param
from nova.tools.bash import MAX_TIMEOUT_S

REGISTRY = default_registry()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext(cwd=work, timeout_s=20)


def run(name: str, ctx: ToolContext, **input: Any) -> ToolOutput:
    tool = REGISTRY.get(name)
    assert tool is not None
    return tool.run(input, ctx)


def run_raw(name: str, ctx: ToolContext, input: Mapping[str, Any]) -> ToolOutput:
    tool = REGISTRY.get(name)
    assert tool is not None
    return tool.run(input, ctx)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0) but is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


# -- registry and schemas -----------------------------------------------------------------------------
def test_default_registry_has_the_six_tools_sorted() -> None:
    assert REGISTRY.names() == ["bash", "edit_file", "glob", "grep", "read_file", "write_file"]
    assert [s.name for s in REGISTRY.specs()] == REGISTRY.names()
    assert default_registry() is not REGISTRY  # a fresh registry per call


def test_read_only_flags() -> None:
    flags = {t.name: t.read_only for t in REGISTRY}
    assert flags == {"bash": False, "edit_file": False, "glob": True, "grep": True,
                     "read_file": True, "write_file": False}


@pytest.mark.parametrize("name", REGISTRY.names())
def test_schema_teaches_the_model(name: str) -> None:
    tool = REGISTRY.get(name)
    assert tool is not None
    schema = tool.input_schema
    assert schema["type"] == "object"
    assert set(schema["required"]) <= set(schema["properties"])
    for key, prop in schema["properties"].items():
        assert prop.get("description"), f"{name}.{key} has no description"
        assert prop["type"] in {"string", "integer", "number", "boolean"}
    assert len(tool.description) > 80


def test_a_property_is_declared_type_first_and_description_last() -> None:
    # The schema's bytes are part of the cached tool catalog: every tool's properties share this order.
    declared = param("integer", "How many.", minimum=1, maximum=MAX_TIMEOUT_S)
    assert json.dumps(declared) == f'{{"type": "integer", "minimum": 1, "maximum": {MAX_TIMEOUT_S}, "description": "How many."}}'
    assert param("array", items=param("string", enum=["a"])) == {"type": "array", "items": {"type": "string", "enum": ["a"]}}
    bash = REGISTRY.get("bash")
    assert bash is not None
    assert list(bash.input_schema["properties"]["timeout"]) == ["type", "minimum", "maximum", "description"]


# -- argument validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", REGISTRY.names())
def test_unparseable_arguments_are_reported_as_invalid_json(name: str, ctx: ToolContext) -> None:
    out = run_raw(name, ctx, {"__invalid_arguments__": '{"path": "a.txt"'})
    assert out.is_error
    assert "not valid JSON" in out.content
    assert '{"path": "a.txt"' in out.content


@pytest.mark.parametrize("name", REGISTRY.names())
def test_missing_required_argument_is_named(name: str, ctx: ToolContext) -> None:
    out = run_raw(name, ctx, {})
    assert out.is_error
    tool = REGISTRY.get(name)
    assert tool is not None
    for key in tool.input_schema["required"]:
        assert f"missing required argument {key!r}" in out.content


def test_wrong_type_names_the_key_and_expected_type(ctx: ToolContext) -> None:
    out = run("read_file", ctx, path="a.txt", offset="3")
    assert out.is_error
    assert "'offset' must be an integer" in out.content
    out = run("bash", ctx, command=["ls"])
    assert "'command' must be a string" in out.content
    out = run("edit_file", ctx, path="a", old_text="x", new_text="y", replace_all="yes")
    assert "'replace_all' must be true or false" in out.content
    out = run("read_file", ctx, path="a.txt", limit=True)  # a JSON boolean is not a line count
    assert "'limit' must be an integer" in out.content


def test_unknown_argument_is_named_with_the_expected_ones(ctx: ToolContext) -> None:
    out = run("read_file", ctx, file_path="a.txt")
    assert out.is_error
    assert "unknown argument 'file_path'" in out.content
    assert "Expected arguments: path, offset, limit" in out.content


def test_range_limits_are_checked(ctx: ToolContext) -> None:
    assert "'offset' must be at least 1" in run("read_file", ctx, path="a", offset=0).content
    assert "'timeout' must be at most 600" in run("bash", ctx, command="true", timeout=9999).content


def test_integral_float_is_accepted_for_integer(ctx: ToolContext) -> None:
    (ctx.cwd / "a.txt").write_text("one\ntwo\nthree\n")
    out = run("read_file", ctx, path="a.txt", offset=2.0, limit=1.0)
    assert not out.is_error
    assert out.content.splitlines()[0] == "     2\ttwo"


# -- read_file ----------------------------------------------------------------------------------------
def test_read_file_numbers_lines(ctx: ToolContext) -> None:
    (ctx.cwd / "a.txt").write_text("alpha\nbeta\r\ngamma")
    out = run("read_file", ctx, path="a.txt")
    assert not out.is_error
    assert out.content == "     1\talpha\n     2\tbeta\n     3\tgamma"
    assert out.metadata["paths_read"] == [str(ctx.cwd / "a.txt")]


def test_read_file_range_and_continuation_note(ctx: ToolContext) -> None:
    (ctx.cwd / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = run("read_file", ctx, path="big.txt", offset=10, limit=3)
    lines = out.content.splitlines()
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "showing lines 10-12 of 100" in out.content
    assert "offset=13" in out.content
    assert out.metadata["first_line"] == 10 and out.metadata["last_line"] == 12


def test_read_file_default_limit(ctx: ToolContext) -> None:
    (ctx.cwd / "huge.txt").write_text("x\n" * 2500)
    out = run("read_file", ctx, path="huge.txt")
    assert "showing lines 1-2000 of 2500" in out.content
    assert out.metadata["total_lines"] == 2500


def test_read_file_absolute_path(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("hello\n")
    out = run("read_file", ctx, path=str(outside))
    assert out.content == "     1\thello"


def test_read_file_missing_suggests_close_names(ctx: ToolContext) -> None:
    (ctx.cwd / "test_tools.py").write_text("")
    out = run("read_file", ctx, path="test_tool.py")
    assert out.is_error
    assert "file not found: test_tool.py" in out.content
    assert "test_tools.py" in out.content


def test_read_file_directory_and_binary_are_refused(ctx: ToolContext) -> None:
    (ctx.cwd / "pkg").mkdir()
    out = run("read_file", ctx, path="pkg")
    assert out.is_error and "is a directory" in out.content and "glob" in out.content
    (ctx.cwd / "blob.bin").write_bytes(b"PK\x03\x04\x00\x00binary")
    out = run("read_file", ctx, path="blob.bin")
    assert out.is_error and "binary file" in out.content


def test_read_file_empty_and_past_end(ctx: ToolContext) -> None:
    (ctx.cwd / "empty.txt").write_text("")
    assert "is empty" in run("read_file", ctx, path="empty.txt").content
    (ctx.cwd / "short.txt").write_text("a\nb\n")
    out = run("read_file", ctx, path="short.txt", offset=5)
    assert out.is_error and "past the end" in out.content and "2 lines" in out.content


def test_read_file_shortens_very_long_lines(ctx: ToolContext) -> None:
    (ctx.cwd / "min.js").write_text("x" * 5000 + "\n")
    out = run("read_file", ctx, path="min.js")
    assert "line shortened, 5000 chars" in out.content
    assert len(out.content) < 2300


# -- write_file ---------------------------------------------------------------------------------------
def test_write_file_creates_parents_and_reports(ctx: ToolContext) -> None:
    out = run("write_file", ctx, path="a/b/c.txt", content="one\ntwo\n")
    assert not out.is_error
    target = ctx.cwd / "a/b/c.txt"
    assert target.read_text() == "one\ntwo\n"
    assert out.content.startswith("Created a/b/c.txt (2 lines")
    assert out.metadata["paths_written"] == [str(target)]
    assert out.metadata["created"] is True


def test_write_file_overwrites_keeps_mode_and_leaves_no_temp_files(ctx: ToolContext) -> None:
    script = ctx.cwd / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    out = run("write_file", ctx, path="run.sh", content="#!/bin/sh\necho new\n")
    assert out.content.startswith("Overwrote run.sh")
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert sorted(p.name for p in ctx.cwd.iterdir()) == ["run.sh"]


def test_write_file_is_atomic_when_the_rename_fails(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    target = ctx.cwd / "keep.txt"
    target.write_text("original")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    out = run("write_file", ctx, path="keep.txt", content="new content")
    assert out.is_error
    assert "No space left on device" in out.content
    assert target.read_text() == "original"
    assert sorted(p.name for p in ctx.cwd.iterdir()) == ["keep.txt"]  # the temp file was removed


def test_write_file_to_a_directory_is_refused(ctx: ToolContext) -> None:
    (ctx.cwd / "d").mkdir()
    out = run("write_file", ctx, path="d", content="x")
    assert out.is_error and "is a directory" in out.content


# -- edit_file ----------------------------------------------------------------------------------------
def test_edit_file_replaces_a_unique_match(ctx: ToolContext) -> None:
    f = ctx.cwd / "m.py"
    f.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = run("edit_file", ctx, path="m.py", old_text="    return 2", new_text="    return 3")
    assert not out.is_error
    assert f.read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"
    assert "replaced 1 occurrence" in out.content
    assert "     5\t    return 3" in out.content  # the edited region, numbered
    assert out.metadata["paths_written"] == [str(f)]


def test_edit_file_not_found_says_read_again(ctx: ToolContext) -> None:
    f = ctx.cwd / "m.py"
    f.write_text("def f():\n    return 1\n")
    out = run("edit_file", ctx, path="m.py", old_text="return 2", new_text="return 3")
    assert out.is_error
    assert "old_text not found in m.py — read the file again" in out.content
    assert f.read_text() == "def f():\n    return 1\n"


def test_edit_file_not_found_points_at_a_whitespace_near_miss(ctx: ToolContext) -> None:
    (ctx.cwd / "m.py").write_text("a = 1\nif a:\n    b = 2\n")
    out = run("edit_file", ctx, path="m.py", old_text="if a:\n  b = 2", new_text="x")
    assert "differs only in whitespace starts at line 2" in out.content


def test_edit_file_not_unique_counts_matches(ctx: ToolContext) -> None:
    f = ctx.cwd / "m.py"
    f.write_text("x = 1\ny = 1\nz = 1\n")
    out = run("edit_file", ctx, path="m.py", old_text="= 1", new_text="= 2")
    assert out.is_error
    assert "matches 3 times" in out.content
    assert "lines 1, 2, 3" in out.content
    assert "replace_all" in out.content and "surrounding lines" in out.content
    assert f.read_text() == "x = 1\ny = 1\nz = 1\n"


def test_edit_file_replace_all(ctx: ToolContext) -> None:
    f = ctx.cwd / "m.py"
    f.write_text("x = 1\ny = 1\n")
    out = run("edit_file", ctx, path="m.py", old_text="= 1", new_text="= 2", replace_all=True)
    assert not out.is_error
    assert f.read_text() == "x = 2\ny = 2\n"
    assert out.metadata["replacements"] == 2


def test_edit_file_keeps_crlf_line_endings(ctx: ToolContext) -> None:
    f = ctx.cwd / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = run("edit_file", ctx, path="w.txt", old_text="one\ntwo", new_text="one\n2")
    assert not out.is_error, out.content
    assert f.read_bytes() == b"one\r\n2\r\nthree\r\n"


def test_edit_file_refusals(ctx: ToolContext) -> None:
    (ctx.cwd / "m.py").write_text("x\n")
    assert "old_text is empty" in run("edit_file", ctx, path="m.py", old_text="", new_text="y").content
    assert "identical" in run("edit_file", ctx, path="m.py", old_text="x", new_text="x").content
    out = run("edit_file", ctx, path="nope.py", old_text="x", new_text="y")
    assert "file not found" in out.content and "write_file" in out.content
    (ctx.cwd / "b.bin").write_bytes(b"\x00\x01x")
    assert "binary" in run("edit_file", ctx, path="b.bin", old_text="x", new_text="y").content


# -- bash ---------------------------------------------------------------------------------------------
def test_bash_success_and_exit_code(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="echo hello")
    assert not out.is_error
    assert out.content == "hello\n[exit code: 0]"
    assert out.metadata["exit_code"] == 0


def test_bash_failure_exit_code(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="echo oops >&2; exit 3")
    assert out.is_error
    assert out.content == "oops\n[exit code: 3]"
    assert out.metadata["exit_code"] == 3
    assert out.metadata["timed_out"] is False


def test_bash_interleaves_stdout_and_stderr(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="echo one; echo two >&2; echo three; echo four >&2")
    assert out.content.splitlines()[:4] == ["one", "two", "three", "four"]


def test_bash_runs_in_the_context_directory(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="pwd && touch made-here")
    assert out.content.splitlines()[0] == str(ctx.cwd)
    assert (ctx.cwd / "made-here").exists()


def test_bash_no_output(ctx: ToolContext) -> None:
    assert run("bash", ctx, command="true").content == "(no output)\n[exit code: 0]"


@pytest.mark.timeout(60)  # a call that waited for its child would hang here: the child never ends by itself
def test_bash_timeout_kills_the_child_process(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="echo started; sleep 3600 & echo $! > child.pid; wait", timeout=1)
    assert out.is_error
    assert out.metadata["timed_out"] is True
    assert "timed out after 1 s" in out.content
    assert "started" in out.content  # output before the timeout is kept
    child = int((ctx.cwd / "child.pid").read_text())
    assert _wait_dead(child), "the sleep child survived the timeout"


def test_bash_timeout_kills_a_child_that_ignores_sigterm(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="trap '' TERM; sleep 30 & echo $! > child.pid; wait", timeout=1)
    assert out.metadata["timed_out"] is True
    assert _wait_dead(int((ctx.cwd / "child.pid").read_text()))


def test_bash_honours_cancel(ctx: ToolContext) -> None:
    timer = threading.Timer(0.3, ctx.cancel.set)
    timer.start()
    try:  # the child never ends by itself: only the cancel ends the call (else its 20 s time limit does)
        out = run("bash", ctx, command="sleep 3600 & echo $! > child.pid; wait")
    finally:
        timer.cancel()
    assert out.metadata["cancelled"] is True and out.metadata["timed_out"] is False and out.is_error
    assert "cancelled" in out.content
    assert _wait_dead(int((ctx.cwd / "child.pid").read_text()))


def test_bash_cancelled_before_start_runs_nothing(ctx: ToolContext) -> None:
    ctx.cancel.set()
    out = run("bash", ctx, command="touch should-not-exist")
    assert out.is_error
    assert not (ctx.cwd / "should-not-exist").exists()


def test_bash_background_process_does_not_hang_the_call(ctx: ToolContext) -> None:
    # The background sleep holds the output pipe for an hour: a call that waited for it would end at its
    # 20 s time limit, timed out, instead of with the script's exit code.
    out = run("bash", ctx, command="sleep 3600 & echo $! > bg.pid; echo done")
    pid = int((ctx.cwd / "bg.pid").read_text())
    try:
        assert out.metadata["timed_out"] is False and out.metadata["exit_code"] == 0
        assert "done" in out.content and "background processes" in out.content
    finally:
        os.kill(pid, 9)


def test_bash_caps_huge_output_keeping_head_and_tail(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="echo FIRST; head -c 6000000 /dev/zero | tr '\\0' a; echo; echo LAST")
    assert out.metadata["exit_code"] == 0
    assert out.metadata["output_bytes_dropped"] > 0
    assert out.content.startswith("FIRST")
    assert "bytes of output dropped" in out.content
    assert out.content.endswith("LAST\n[exit code: 0]")


def test_bash_empty_command(ctx: ToolContext) -> None:
    out = run("bash", ctx, command="   ")
    assert out.is_error and "empty" in out.content


# -- grep ---------------------------------------------------------------------------------------------
@pytest.fixture
def tree(ctx: ToolContext) -> Path:
    root = ctx.cwd
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/core.py").write_text("import os\n\ndef handler():\n    return os.getcwd()\n")
    (root / "src/pkg/util.ts").write_text("export function handler() {}\n")
    (root / "README.md").write_text("# Handler docs\n")
    (root / ".git").mkdir()
    (root / ".git/config").write_text("handler in git internals\n")
    (root / "node_modules/dep").mkdir(parents=True)
    (root / "node_modules/dep/index.js").write_text("function handler() {}\n")
    (root / "image.png").write_bytes(b"\x89PNG\x00\x00handler")
    return root


def test_grep_finds_lines_with_paths_and_numbers(ctx: ToolContext, tree: Path) -> None:
    out = run("grep", ctx, pattern=r"def handler\(")
    assert out.content == "src/pkg/core.py:3: def handler():"
    assert out.metadata["matches"] == 1


def test_grep_skips_git_noise_dirs_and_binaries(ctx: ToolContext, tree: Path) -> None:
    out = run("grep", ctx, pattern="handler")
    assert ".git" not in out.content
    assert "node_modules" not in out.content
    assert "image.png" not in out.content
    assert "src/pkg/core.py:3:" in out.content and "src/pkg/util.ts:1:" in out.content


def test_grep_inside_a_skipped_dir_when_asked(ctx: ToolContext, tree: Path) -> None:
    out = run("grep", ctx, pattern="handler", path="node_modules")
    assert "node_modules/dep/index.js:1:" in out.content


def test_grep_glob_and_ignore_case(ctx: ToolContext, tree: Path) -> None:
    out = run("grep", ctx, pattern="handler", glob="*.{ts,md}", ignore_case=True)
    assert out.content.splitlines() == ["README.md:1: # Handler docs", "src/pkg/util.ts:1: export function handler() {}"]
    out = run("grep", ctx, pattern="handler", glob="src/**/*.py")
    assert out.content.splitlines() == ["src/pkg/core.py:3: def handler():"]


def test_grep_a_single_file(ctx: ToolContext, tree: Path) -> None:
    out = run("grep", ctx, pattern="os", path="src/pkg/core.py")
    assert out.content.splitlines() == ["src/pkg/core.py:1: import os", "src/pkg/core.py:4:     return os.getcwd()"]


def test_grep_caps_results_with_a_note(ctx: ToolContext) -> None:
    (ctx.cwd / "many.txt").write_text("hit\n" * 250)
    out = run("grep", ctx, pattern="hit")
    lines = out.content.splitlines()
    assert len([ln for ln in lines if ln.startswith("many.txt:")]) == 200
    assert "first 200 of 250 matches" in out.content
    assert out.metadata["truncated"] is True


def test_grep_bad_regex_and_no_match(ctx: ToolContext, tree: Path) -> None:
    out = run("grep", ctx, pattern="(unclosed")
    assert out.is_error and "invalid regular expression" in out.content
    out = run("grep", ctx, pattern="nothing-like-this")
    assert not out.is_error and out.content.startswith("No matches")
    assert run("grep", ctx, pattern="x", path="missing-dir").is_error


# -- glob ---------------------------------------------------------------------------------------------
def test_glob_recursive_newest_first(ctx: ToolContext, tree: Path) -> None:
    (tree / "top.py").write_text("")
    now = time.time()
    os.utime(tree / "top.py", (now - 100, now - 100))
    os.utime(tree / "src/pkg/core.py", (now, now))
    out = run("glob", ctx, pattern="**/*.py")
    assert out.content.splitlines() == ["src/pkg/core.py", "top.py"]
    os.utime(tree / "top.py", (now + 100, now + 100))
    assert run("glob", ctx, pattern="**/*.py").content.splitlines() == ["top.py", "src/pkg/core.py"]


def test_glob_single_star_stays_in_one_directory(ctx: ToolContext, tree: Path) -> None:
    assert run("glob", ctx, pattern="*.md").content.splitlines() == ["README.md"]
    out = run("glob", ctx, pattern="*.py")
    assert out.content.startswith("No files match")


def test_glob_braces_path_and_skips(ctx: ToolContext, tree: Path) -> None:
    out = run("glob", ctx, pattern="**/*.{ts,js}")
    assert out.content.splitlines() == ["src/pkg/util.ts"]  # node_modules skipped
    out = run("glob", ctx, pattern="*.py", path="src/pkg")
    assert out.content.splitlines() == ["src/pkg/core.py"]


def test_glob_caps_results(ctx: ToolContext) -> None:
    for i in range(205):
        (ctx.cwd / f"f{i:03d}.txt").write_text("")
    out = run("glob", ctx, pattern="*.txt")
    assert "200 most recently modified of 205" in out.content
    assert out.metadata["count"] == 205


def test_glob_errors(ctx: ToolContext, tree: Path) -> None:
    assert "not found" in run("glob", ctx, pattern="*", path="missing").content
    assert "not a directory" in run("glob", ctx, pattern="*", path="README.md").content
