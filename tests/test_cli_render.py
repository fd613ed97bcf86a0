"""The terminal timeline: streamed text in a terminal, whole messages when piped."""

from __future__ import annotations

import io

from rich.console import Console

from nova import events as ev
from nova.cli.render import Timeline, format_footer


def render(stream_text: bool, events: list[ev.Event]) -> str:
    out = io.StringIO()
    timeline = Timeline(Console(file=out, width=100, color_system=None), stream_text=stream_text)
    for event in events:
        timeline(event)
    return out.getvalue()


EVENTS: list[ev.Event] = [
    ev.TextDelta(session_id="s", text="Hel"),
    ev.TextDelta(session_id="s", text="lo."),
    ev.AssistantMessage(session_id="s", message_id="m", text="Hello."),
    ev.ToolCallStarted(session_id="s", tool_use_id="t", name="bash", input={"command": "ls -la"}),
]


def test_streamed_text_is_labelled_once_and_not_repeated() -> None:
    text = render(True, EVENTS)
    assert text.count("assistant") == 1 and text.count("Hello.") == 1
    assert "→ bash ls -la" in text


def test_piped_output_prints_whole_messages() -> None:
    text = render(False, EVENTS)
    assert "assistant Hello." in text and "Hel\n" not in text


def test_footer_says_when_the_price_is_unknown() -> None:
    line = format_footer(used=10, limit=100, window=200, cost=None, cache_hit_rate=None)
    assert "cost unknown" in line and "10.0%" in line


def test_footer_says_cost_once() -> None:
    line = format_footer(used=10, limit=100, window=200, cost=None, cache_hit_rate=None)
    assert "cost cost" not in line and "cost unknown (model not in the price table)" in line


def test_a_declined_compaction_reads_as_a_decision_not_a_failure() -> None:
    declined = ev.CompactionEnd(session_id="s", ok=False, declined=True, tokens_before=900, tokens_after=900,
                                error="the summary would not make the view smaller (900 → 1,400 tokens); nothing changed")
    failed = ev.CompactionEnd(session_id="s", ok=False, tokens_before=900, tokens_after=900,
                              error="summarizer failed: timeout")
    text = render(False, [declined, failed])
    assert "compaction declined: the summary would not make the view smaller" in text
    assert "compaction failed: summarizer failed: timeout" in text
