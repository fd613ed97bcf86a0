"""The diff an approval shows for edit_file and write_file: the change the tool would make, or none."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from nova.tools.change_preview import MAX_DIFF_LINES, MAX_MATCH_PAIRS, change_diff


def test_an_edit_shows_the_lines_it_changes_with_context(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    diff = change_diff("edit_file", {"path": "a.py", "old_text": "four", "new_text": "FOUR\n4"}, tmp_path)
    assert diff == ("--- a/a.py\n+++ b/a.py\n@@ -1,7 +1,8 @@\n one\n two\n three\n-four\n+FOUR\n+4\n"
                    " five\n six\n seven\n")
    assert (tmp_path / "a.py").read_text().count("four") == 1  # a preview changes nothing


def test_a_new_file_is_all_added_and_an_overwrite_shows_both_sides(tmp_path: Path) -> None:
    new = change_diff("write_file", {"path": "sub/new.txt", "content": "hello\nworld"}, tmp_path)
    assert new == ("--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
                   "\\ No newline at end of file\n")
    (tmp_path / "old.txt").write_text("x\n")
    assert change_diff("write_file", {"path": "old.txt", "content": "y\n"}, tmp_path).endswith("-x\n+y\n")
    assert change_diff("write_file", {"path": "old.txt", "content": "x\n"}, tmp_path) == ""


def test_an_edit_that_would_fail_has_no_diff(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\nsame\n")
    assert change_diff("edit_file", {"path": "a.txt", "old_text": "absent", "new_text": "x"}, tmp_path) == ""
    assert change_diff("edit_file", {"path": "a.txt", "old_text": "same", "new_text": "x"}, tmp_path) == ""
    both = change_diff("edit_file", {"path": "a.txt", "old_text": "same", "new_text": "x", "replace_all": True},
                       tmp_path)
    assert both.endswith("-same\n-same\n+x\n+x\n")
    assert change_diff("edit_file", {"path": "missing.txt", "old_text": "a", "new_text": "b"}, tmp_path) == ""
    assert change_diff("bash", {"command": "ls"}, tmp_path) == ""
    assert change_diff("edit_file", {"path": "a\0b", "old_text": "a", "new_text": "b"}, tmp_path) == ""


def test_crlf_files_match_as_the_tool_matches_them(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    diff = change_diff("edit_file", {"path": "w.txt", "old_text": "a\nb", "new_text": "a\nB"}, tmp_path)
    assert "-b\r\n+B\r\n" in diff


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    assert change_diff("write_file", {"path": "pipe", "content": "x"}, tmp_path) == ""


def test_a_long_diff_is_clipped_and_says_how_much_is_left_out(tmp_path: Path) -> None:
    diff = change_diff("write_file", {"path": "big.txt", "content": "".join(f"{i}\n" for i in range(500))}, tmp_path)
    rows = diff.splitlines()
    assert len(rows) == MAX_DIFF_LINES + 1
    assert rows[-1] == f"… {500 + 3 - MAX_DIFF_LINES} more diff lines not shown"


@pytest.mark.parametrize("where", [0, 1, 5, 200, 397, 399])
def test_an_edit_in_a_long_file_is_numbered_as_in_the_file(tmp_path: Path, where: int) -> None:
    lines = [f"line {i}\n" for i in range(400)]
    (tmp_path / "long.txt").write_text("".join(lines))
    args = {"path": "long.txt", "old_text": lines[where], "new_text": f"changed {where}\nand one more\n"}
    after = "".join(lines).replace(lines[where], args["new_text"])
    # The lines set aside before matching do not move the hunk: the same diff as over the whole file.
    expected = "".join(difflib.unified_diff(lines, after.splitlines(keepends=True), "a/long.txt", "b/long.txt"))
    assert change_diff("edit_file", args, tmp_path) == expected


def test_a_rewrite_too_large_to_match_is_shown_removed_then_added(tmp_path: Path) -> None:
    old = [f"old {i}\n" for i in range(3000)]
    new = [f"new {i}\n" for i in range(2000)]
    assert len(old) * len(new) > MAX_MATCH_PAIRS
    (tmp_path / "big.txt").write_text("keep\n" + "".join(old) + "end\n")
    diff = change_diff("write_file", {"path": "big.txt", "content": "keep\n" + "".join(new) + "end\n"}, tmp_path)
    rows = diff.splitlines()
    assert rows[:5] == ["--- a/big.txt", "+++ b/big.txt", "@@ -1,3002 +1,2002 @@", " keep", "-old 0"]
    assert rows[-1] == f"… {2 + 1 + 1 + 3000 + 2000 + 1 - MAX_DIFF_LINES} more diff lines not shown"
