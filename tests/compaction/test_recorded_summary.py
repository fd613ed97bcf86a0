"""A compaction the recorded agent made is history, not noise: imported as a summary with its boundary,
folded by Nova's next compaction like one of its own — its facts carried, its text never taken for a user
request or a tool result — and Nova's own summary rows survive a compaction that cannot read its
originals back."""

from __future__ import annotations

import pytest

from nova.context.budget import ContextBudget
from nova.context.compaction import compact
from nova.context.summarize import ExtractiveSummarizer, user_entries_of_summary
from nova.evaluation.replay import replay_messages, view_text
from nova.messages import Message, SummaryPart, ToolUsePart
from nova.model import ToolSpec
from nova.sessions.importers import read_session_file
from nova.settings import CompactionConfig
from nova.testing import shared_data_dir
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

from .helpers import exchange

COUNTER = HeuristicCounter(CL100K_PROFILE)
ANCHOR = shared_data_dir() / "sessions" / "codemie" / "claude-code" / "session-624a4a58.jsonl"
# One declared tool: the recording has none, and without any the replay sizes a placeholder for Claude
# Code's whole fixed prompt (50k tokens), larger than these windows.
TOOLS = (ToolSpec(name="Bash", description="Run a shell command.", input_schema={"type": "object"}),)


@pytest.mark.skipif(not ANCHOR.is_file(), reason=f"shared data absent ({ANCHOR}); set NOVA_SHARED_DATA")
@pytest.mark.parametrize("window", [32_000, 64_000])
def test_a_replay_with_claude_codes_own_summary_left_in_still_names_every_file_written(window: int) -> None:
    session = read_session_file(ANCHOR)
    [recorded] = [m for m in session.messages if m.metadata.get("compaction")]
    assert recorded.has("summary") and recorded.metadata["compaction"]["tokens_before"] == 155_979
    written = {str(u.input["file_path"]) for m in session.messages for u in m.tool_uses()
               if u.name in ("Write", "Edit", "MultiEdit")}
    report = replay_messages(session.messages, window=window, policy="nova", tools=TOOLS)
    assert report.compactions >= 2
    text = view_text(report.final_view)
    assert sorted(p for p in written if p not in text) == []
    # Its text is folded as a summary: never copied into the user section as a request.
    summaries = [p.text for m in report.final_view for p in m.parts if isinstance(p, SummaryPart)]
    carried = [entry for s in summaries for _, entry in user_entries_of_summary(s)]
    assert carried and not [t for t in carried if "continued from a previous conversation" in t]


def test_a_recorded_summary_whose_messages_are_gone_is_carried_in_its_own_words_not_as_a_request() -> None:
    # A recording that starts after its agent compacted: the summary stands for messages nobody has.
    recorded = Message(role="user", id="m00001", parts=(SummaryPart(
        "This session is being continued from a previous conversation that ran out of context.\n"
        "Files: src/ledger/post.py was rewritten to use `BatchWriter`.", covers=()),),
        metadata={"compaction": {"source": "claude-code", "trigger": "auto"}})
    history = [recorded, Message.user("Now add a test for the batch writer.", id="m00002")]
    for i in range(16):
        history += exchange(i, output_chars=3000)
    budget = ContextBudget.derive(CompactionConfig(), 32_000)
    outcome = compact(history, summarizer=ExtractiveSummarizer(COUNTER), budget=budget, counter=COUNTER,
                      raw_lookup={m.id: m for m in history}.get)
    assert outcome.ok, outcome.reason
    summary = outcome.messages[0].text
    assert "Earlier summary (written by claude-code" in summary and "`BatchWriter`" in summary
    assert [i for i, _ in user_entries_of_summary(summary)] == ["m00002"]


def test_nova_summary_rows_survive_a_compaction_that_cannot_read_its_originals_back() -> None:
    write = ToolUsePart("w1", "write_file", {"path": "src/app/config_loader.py", "content": "x = 1"})
    todo = ToolUsePart("t1", "TodoWrite", {"todos": [{"content": "Wire config_loader into main", "status": "pending"}]})
    first = [Message.user("Load the config from TOML.", id="u1"),
             Message(role="assistant", id="a1", parts=(write, todo)),
             Message.user("ok", id="u2"),
             Message.assistant("I decided to keep the loader pure instead of reading env vars in it.", id="a2")]
    for i in range(12):
        first += exchange(i, output_chars=3000)
    budget = ContextBudget.derive(CompactionConfig(), 32_000)
    once = compact(first, summarizer=ExtractiveSummarizer(COUNTER), budget=budget, counter=COUNTER)
    assert once.ok, once.reason
    later = list(once.messages)
    for i in range(12, 26):
        later += exchange(i, output_chars=3000)
    # No raw lookup: a session resumed after the first compaction knows only its summary.
    twice = compact(later, summarizer=ExtractiveSummarizer(COUNTER), budget=budget, counter=COUNTER, forced=True)
    assert twice.ok, twice.reason
    text = twice.messages[1].text
    assert "src/app/config_loader.py" in text
    assert "[pending] Wire config_loader into main" in text
    assert "I decided to keep the loader pure instead of reading env vars in it." in text
    assert [i for i, _ in user_entries_of_summary(text)] == ["u2"]  # u1 opens the view, as it was
