"""The extractive summary's file lists come from the declared tool map (`nova.history.tool_paths`): Claude Code's
capitalised `Edit`/`Write`/`Read` count, prose with a slash does not, and an imported agent's own inserts
(isMeta text, its compaction summary) are never listed as user requests."""

from __future__ import annotations

from nova.context.summarize import ExtractiveSummarizer, SummaryRequest, _collect, is_user_message
from nova.messages import Message, SummaryPart, ToolUsePart


def claude_code_session() -> list[Message]:
    calls = (ToolUsePart("t1", "Read", {"file_path": "/repo/src/app.py"}),
             ToolUsePart("t2", "Edit", {"file_path": "/repo/src/app.py", "old_string": "a", "new_string": "b"}),
             ToolUsePart("t3", "Write", {"file_path": "/repo/docs/notes.md", "content": "x"}),
             ToolUsePart("t4", "Read", {"file_path": "/repo/README.rst"}))
    return [Message.user("Make the toggle switch between open/closed states."),
            Message(role="assistant", parts=calls),
            Message.assistant("Done: the toggle now flips open/closed and/or resets.")]


def test_a_claude_code_session_lists_its_edited_and_written_files() -> None:
    facts = _collect(claude_code_session())
    assert list(facts.files_changed) == ["/repo/src/app.py", "/repo/docs/notes.md"]
    assert list(facts.files_read) == ["/repo/README.rst"]
    text = ExtractiveSummarizer().summarize(SummaryRequest(older=claude_code_session(), max_tokens=800))
    assert "/repo/docs/notes.md" in text and "/repo/src/app.py" in text


def test_prose_with_a_slash_is_not_a_file() -> None:
    shell = ToolUsePart("t9", "Bash", {"command": "echo open/closed > /tmp/state.txt"})
    facts = _collect([*claude_code_session(), Message(role="assistant", parts=(shell,))])
    listed = set(facts.files_changed) | set(facts.files_read)
    assert "/tmp/state.txt" in facts.files_changed
    assert not {p for p in listed if "open/closed" in p or "and/or" in p}


def test_meta_text_and_imported_summaries_are_not_user_requests() -> None:
    meta = Message.user("Base directory for this skill: /skills/pdf. Follow these steps...",
                        metadata={"is_meta": True})
    carried = Message(role="user", parts=(SummaryPart("This session is being continued from a previous one."),),
                      metadata={"compaction": {"source": "claude-code"}})
    imported_text = Message.user("Summary of the earlier conversation", metadata={"compaction": {"source": "x"}})
    asked = Message.user("Please fix the login bug.")
    assert [m for m in (meta, carried, imported_text, asked) if is_user_message(m)] == [asked]
    facts = _collect([meta, carried, asked])
    assert [text for _, text in facts.users] == ["Please fix the login bug."]
