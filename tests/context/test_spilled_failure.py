"""A failing command whose output was spilled still counts as a failure in the summary: the exit code
is read from the output the placeholder shows, not from its header (whose saved-file path pushed the
`<returncode>` tag past where the check looked, so a 32k replay lost a failing pytest summary line)."""

from __future__ import annotations

from pathlib import Path

from nova.context.spill import render_placeholder, shown_output
from nova.context.summarize import ExtractiveSummarizer, SummaryRequest, error_lines, failure_code
from nova.messages import Message, ToolResultPart, ToolUsePart

VERDICT = "======================= 1 failed, 155 warnings in 0.31s ========================"


def spilled_failure(tmp_path: Path) -> ToolResultPart:
    output = ("<returncode>1</returncode>\n<output_tail>\n"
              + "".join(f"tests/test_ext.py::test_case_{i} PASSED\n" for i in range(400))
              + f"{VERDICT}\n</output_tail>")
    path = tmp_path / "session" / "tool-output" / "m00101-call_4f1c2a9e7b.txt"
    return ToolResultPart("call-1", render_placeholder(output, path=path, preview_chars=1_000))


def test_the_exit_code_is_read_past_the_placeholder_header(tmp_path: Path) -> None:
    result = spilled_failure(tmp_path)
    assert "<returncode>1</returncode>" not in result.content[:200]  # the header alone is longer than that
    assert shown_output(result.content).startswith("<returncode>1</returncode>")
    assert failure_code(result) == 1
    assert error_lines(result.content)[-1] == VERDICT  # no placeholder tag as the last "error" line
    assert failure_code(ToolResultPart("x", "<returncode>0</returncode>\nok")) is None


def test_the_summary_keeps_a_spilled_failure_with_its_verdict(tmp_path: Path) -> None:
    call = ToolUsePart("call-1", "bash", {"command": "pytest tests/test_ext_autodoc_typehints_description.py"})
    older = [Message.user("Fix the autodoc type aliases."), Message(role="assistant", parts=(call,)),
             Message(role="user", parts=(spilled_failure(tmp_path),))]
    text = ExtractiveSummarizer().summarize(SummaryRequest(older=older, max_tokens=800))
    assert "pytest tests/test_ext_autodoc_typehints_description.py` exited 1" in text
    assert VERDICT in text
