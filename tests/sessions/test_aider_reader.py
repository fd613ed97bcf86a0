"""Aider's `.aider.chat.history.md`, read from a fixture written the way Aider's `InputOutput` appends to
it: `#### ` input lines and `> ` notes each ending in a Markdown line break, replies verbatim, commands
typed at the prompt, a failed edit that Aider answers itself, and a second run."""

from __future__ import annotations

from pathlib import Path

from nova.model import usage_of
from nova.sessions.importers import read_session_file
from nova.sessions.repair import repair_history

HISTORY = Path(__file__).parent.parent / "fixtures" / "sessions" / "aider" / ".aider.chat.history.md"


def test_requests_replies_and_runs() -> None:
    imported = read_session_file(HISTORY)
    assert imported.format == "aider" and imported.meta["runs"] == 2
    roles = [m.role for m in imported.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant", "user",
                     "assistant"]
    # A multi-line input is one request, without the Markdown line breaks Aider wrote.
    assert imported.messages[0].text == "make divide raise ValueError on zero\nand keep the message short"
    assert imported.meta["source_counts"] == {"responses": 5, "tool_calls": 0, "tool_results": 0}
    assert len({m.id for m in imported.messages}) == len(imported.messages)


def test_search_replace_blocks_stay_whole() -> None:
    reply = read_session_file(HISTORY).messages[1].text
    assert reply.startswith("I'll add a zero check") and reply.endswith(">>>>>>> REPLACE\n```")
    assert "<<<<<<< SEARCH" in reply and "=======" in reply and "Tokens:" not in reply


def test_commands_are_not_requests_and_notes_are_not_replies() -> None:
    imported = read_session_file(HISTORY)
    texts = [m.text for m in imported.messages]
    assert imported.meta["commands"] == ["/add calc/test_ops.py", "/ask does the test cover the zero case?",
                                         "!pytest -q"]
    assert not any(t.startswith(("/", "!")) or "Added calc/test_ops.py" in t for t in texts)
    # `/ask` logs its question again as plain input: that is the request the model got.
    assert texts[2] == "does the test cover the zero case?"
    assert imported.meta["files_edited"] == ["calc/ops.py", "calc/test_ops.py"]
    assert all("<blank>" not in t for t in texts)


def test_a_replys_own_heading_and_quote_stay_in_the_reply() -> None:
    answer = read_session_file(HISTORY).messages[3].text
    assert answer.startswith("#### Short answer") and "> assert divide(6, 3) == 2" in answer


def test_aider_answering_a_failed_edit_is_a_marked_user_message() -> None:
    messages = read_session_file(HISTORY).messages
    between = messages[6]
    assert between.role == "user" and between.metadata == {"is_meta": True}
    assert between.text.startswith("The LLM did not conform to the edit format.")
    assert "failed to match" in between.text and "Tokens:" not in between.text
    # Replies stay separate responses, so replay counts every model call.
    repaired, _ = repair_history(messages)
    assert sum(m.role == "assistant" for m in repaired) == 5


def test_token_notes_become_each_replys_usage() -> None:
    messages = read_session_file(HISTORY).messages
    first = usage_of(messages[1])
    assert first is not None and first.context_tokens == 2400 and first.cache_write_tokens == 1900
    assert first.output_tokens == 98
    second = usage_of(messages[3])
    assert second is not None and second.cache_read_tokens == 1900 and second.context_tokens == 3100
    assert all(usage_of(m) is not None for m in messages if m.role == "assistant")


def test_each_reply_names_the_model_aider_sent_to_and_keeps_its_recorded_price() -> None:
    imported = read_session_file(HISTORY)
    replies = [m for m in imported.messages if m.role == "assistant"]
    # "Main model: anthropic/claude-3-7-sonnet-20250219 with diff edit format": priced and windowed by it.
    assert {m.metadata["model"] for m in replies} == {"anthropic/claude-3-7-sonnet-20250219"}
    assert imported.meta["model"] == "anthropic/claude-3-7-sonnet-20250219"
    # "Cost: $0.0087 message, $0.0087 session": the message's figure, not the session's running total.
    assert [m.metadata.get("cost_usd") for m in replies][:2] == [0.0087, 0.0041]
