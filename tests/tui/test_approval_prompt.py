"""The approval prompt's words (no Textual needed): what the call does, why the person is asked, the keys."""

from __future__ import annotations

from types import MappingProxyType

from nova.tools.permissions import PermissionRequest
from nova.tui.approval_prompt import answer_for_key, describe_request


def request(tool: str, reason: str, rule: str | None = None, **args: object) -> PermissionRequest:
    return PermissionRequest(tool=tool, input=MappingProxyType(dict(args)), summary=f"{tool}: …", reason=reason,
                             rule=rule)


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
