"""The approval prompt's words (no Textual needed): what the call does, why the person is asked, the keys."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from nova.tools.change_preview import change_diff
from nova.tools.permissions import PermissionRequest
from nova.tui.approval_prompt import ApprovalPrompt, answer_for_key, describe_request


def request(tool: str, reason: str, rule: str | None = None, diff: str = "", **args: object) -> PermissionRequest:
    return PermissionRequest(tool=tool, input=MappingProxyType(dict(args)), summary=f"{tool}: …", reason=reason,
                             rule=rule, diff=diff)


def test_an_edit_with_its_diff_shows_the_diff_instead_of_the_replacement(tmp_path: Path) -> None:
    (tmp_path / "stats.py").write_text("def mean(a, n):\n    return a / (n - 1)\n")
    args = {"path": "stats.py", "old_text": "a / (n - 1)", "new_text": "a / n\x1b[2J"}
    shown = describe_request(request("edit_file", "edit_file can change files or run commands",
                                     diff=change_diff("edit_file", args, tmp_path), **args))
    assert shown.detail == "stats.py"
    # The model's text is shown as text: the escape it put in the edit cannot clear the screen.
    assert shown.diff.endswith("-    return a / (n - 1)\n+    return a / n\\x1b[2J\n")
    rendered = ApprovalPrompt(request("edit_file", "x", diff=shown.diff, **args),
                              lambda _: None)._render_prompt()
    lines = rendered.plain.splitlines()
    assert lines[1:4] == ["  stats.py", "  --- a/stats.py", "  +++ b/stats.py"]
    assert "  +    return a / n\\x1b[2J" in lines
    styles = {rendered.plain[span.start:span.end]: str(span.style) for span in rendered.spans}
    assert styles["-    return a / (n - 1)"] == "red" and styles["+    return a / n\\x1b[2J"] == "green"


def test_an_edit_shows_the_file_and_the_replacement() -> None:
    text = describe_request(request("edit_file", "edit_file can change files or run commands",
                                    path="calc/stats.py", old_text="a / (n - 1)", new_text="a / n"))
    assert text.question == "Allow edit_file to edit this file?"
    assert text.detail == "calc/stats.py\n  replace: a / (n - 1)\n  with:    a / n"
    assert text.why == "asked because edit_file can change files or run commands"
    assert text.keys.startswith("y = yes, once    a = always allow edit_file in this session    n = no")


def test_the_rule_that_asked_is_named() -> None:
    text = describe_request(request("bash", "the ask rule `bash(git push*)` matches", "bash(git push*)",
                                    command="git push origin main"))
    assert text.question == "Allow bash to run this command?" and text.detail == "git push origin main"
    assert text.why == "asked because the ask rule `bash(git push*)` matches"
    # A rule the reason does not already quote is added.
    other = describe_request(request("write_file", "it writes outside the workspace", "write_file(/etc/*)",
                                     path="/etc/hosts", content="x" * 1200))
    assert other.detail == "/etc/hosts  (1,200 characters)"
    assert other.why == "asked because it writes outside the workspace (rule `write_file(/etc/*)`)"


def test_keys() -> None:
    assert [answer_for_key(k, c) for k, c in (("y", "y"), ("A", "A"), ("n", "n"), ("escape", None),
                                              ("enter", "\r"), ("x", "x"))] == ["y", "a", "n", "n", None, None]
