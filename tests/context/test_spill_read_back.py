"""Reading a spilled `read_file` result back shows each line with one number: the saved copy already
holds read_file's numbered lines, and numbering them again gave `600\t   600\t2026-…` in every demo run."""

from __future__ import annotations

import re
from pathlib import Path

from nova.context.spill import Spiller
from nova.messages import ToolResultPart, ToolUsePart
from nova.settings import SpillConfig
from nova.tools import default_registry
from nova.tools.base import ToolContext

READ = default_registry().get("read_file")
assert READ is not None
_SAVED = re.compile(r"Full output saved to: (\S+)")


def _log(tmp_path: Path, lines: int = 1400) -> Path:
    path = tmp_path / "project" / "server.log"
    path.parent.mkdir()
    path.write_text("".join(f"2026-11-28T03:{n // 60:02d}:{n % 60:02d}Z INFO job={n}\n" for n in range(lines)))
    return path


def _spilled_read(tmp_path: Path) -> tuple[ToolContext, Path]:
    """Read the log whole through read_file, spill the result as the agent would, return the saved copy."""
    log = _log(tmp_path)
    session_dir = tmp_path / "session"
    ctx = ToolContext(cwd=log.parent, session_dir=session_dir)
    whole = READ.run({"path": "server.log"}, ctx)
    result = Spiller(config=SpillConfig(max_result_chars=10_000), session_dir=session_dir).process_result(
        ToolUsePart(id="toolu_1", name="read_file", input={"path": "server.log"}),
        ToolResultPart(tool_use_id="toolu_1", content=whole.content))
    found = _SAVED.search(result.content)
    assert found is not None, result.content[:300]
    return ctx, Path(found.group(1))


def test_reading_the_saved_copy_back_shows_one_number_per_line(tmp_path: Path) -> None:
    ctx, saved = _spilled_read(tmp_path)
    part = READ.run({"path": str(saved), "offset": 600, "limit": 160}, ctx)
    lines = part.content.splitlines()
    body = [line for line in lines if not line.startswith("[")]
    assert len(body) == 160
    for n, line in enumerate(body, 600):
        number, tab, rest = line.partition("\t")
        assert tab and int(number) == n, line
        # The log line itself follows, not a second number: line 600 of the file is job=599.
        assert rest == f"2026-11-28T03:{(n - 1) // 60:02d}:{(n - 1) % 60:02d}Z INFO job={n - 1}", line
    assert "[showing lines 600-759 of 1400; pass offset=760 to read further]" in lines


def test_a_numbered_looking_file_of_the_project_is_still_numbered(tmp_path: Path) -> None:
    """Only a file under the session's own directory keeps the numbers it holds: a project file whose
    lines happen to start with a number and a tab (a TSV) is read as any file is."""
    (tmp_path / "ids.tsv").write_text("     7\tseven\n     8\teight\n")
    out = READ.run({"path": "ids.tsv"}, ToolContext(cwd=tmp_path, session_dir=tmp_path / "session"))
    assert out.content.splitlines() == ["     1\t     7\tseven", "     2\t     8\teight"]


def test_a_saved_command_output_is_numbered_like_any_file(tmp_path: Path) -> None:
    """A spilled bash output does not start with read_file's numbers, so reading it back numbers it."""
    saved = tmp_path / "session" / "tool-results" / "toolu_2.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("   12\tlooks numbered\nplain line\n")
    out = READ.run({"path": str(saved)}, ToolContext(cwd=tmp_path, session_dir=tmp_path / "session"))
    assert out.content.splitlines() == ["     1\t   12\tlooks numbered", "     2\tplain line"]
