"""The picture of the window (`nova.context.picture`) over a real compiled manifest: each segment gets
the kind a person reads it as, and the kinds plus what is free sum to the window — the bar the web page
draws and the TUI's `/context` prints, and what `nova context --json` carries."""

from __future__ import annotations

from nova.context.compiler import SourceText, compile
from nova.context.picture import KINDS, kind_of, picture
from nova.messages import Message, SummaryPart

from .test_compiler import HEAD, _memory_message, history, inputs


def test_each_segment_is_read_as_its_kind_and_the_picture_sums_to_the_window() -> None:
    summary = Message(role="user", parts=(SummaryPart("[Previous conversation summary]\nold facts",
                                                      covers=("x1", "x2")),), id="sum1", created_at=1.0)
    hist = [summary, Message.assistant("noted", id="ack", created_at=1.0), *history(3)]
    hist.insert(2, _memory_message(("prefers-pytest", "The user runs tests with pytest.")))
    head = [*HEAD, SourceText(id="policy:/etc/nova/policy.md", cls="always-on", source="file:/etc/nova/policy.md#1",
                              text="Never push to main.", reason="org policy")]
    manifest = compile(inputs(hist, head=head, window=20_000, limit=16_000)).manifest
    kinds = {s.id: kind_of(s) for s in manifest.segments}
    assert kinds["system.contract"] == "system" and kinds["tools"] == "tools" and kinds["request"] == "history"
    assert kinds["rules:/p/NOVA.md"] == kinds["policy:/etc/nova/policy.md"] == "rules"
    assert kinds["task.state"] == kinds["environment"] == "observations"
    held = {kinds[s.id] for s in manifest.segments if s.id.startswith("history.")}
    assert {"summary", "memory", "history"} <= held
    slices = picture(manifest)
    assert [s.kind for s in slices] == list(KINDS) == ["system", "tools", "rules", "memory", "history", "summary",
                                                       "observations", "free"]
    tokens = {s.kind: s.tokens for s in slices}
    assert sum(tokens.values()) == manifest.window == 20_000
    assert tokens["free"] == manifest.window - manifest.used
    for kind in ("memory", "summary", "rules"):
        assert tokens[kind] == sum(s.tokens for s in manifest.segments if kinds[s.id] == kind) > 0
