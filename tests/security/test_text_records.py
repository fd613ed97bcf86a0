"""Any text reaches the record intact: lone surrogates (a badly encoded terminal, bytes a tool could not
decode, a model's broken escape), NUL and invalid UTF-8 are stored losslessly, never a crash that loses
the turn's message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.sessions.session import Session, list_sessions

TEXTS = [
    "a lone high surrogate \ud800 here",
    "a lone low surrogate \udcff here",
    "NUL \x00 inside",
    os.fsdecode(b"bytes a terminal sent: \xff\xfe\xc3"),  # surrogateescape, as argv arrives
    "ordinary non-ASCII: 你好, café, 🙂 and \ud83d alone",
]


@pytest.mark.parametrize("text", TEXTS)
def test_every_kind_of_message_round_trips_through_the_record(tmp_path: Path, text: str) -> None:
    home = tmp_path / "home"
    session = Session.create(home, title=text, cwd=tmp_path)
    use = ToolUsePart(id="toolu_1", name="bash", input={"command": f"echo '{text}'"})
    messages = [
        Message.user(text),
        assistant_message(text, [use]),
        Message(role="user", parts=(ToolResultPart("toolu_1", text),)),
        Message(role="assistant", parts=(TextPart(text),)),
    ]
    for message in messages:
        session.record_message(message)
    # A snip rewrites a message in the store: the rewritten copy must hold the same text.
    session.update_message_content(messages[2].id, messages[2].with_parts([ToolResultPart("toolu_1", text + "!")]))
    session.close()

    reopened = Session.open(home, session.id)
    history = reopened.load_history()
    reopened.close()
    assert [m.text for m in history] == [text, text, "", text]
    assert history[1].tool_uses()[0].input == use.input
    assert history[2].tool_results()[0].content == text + "!"
    metas, problems = list_sessions(home)
    assert problems == [] and metas[0].title  # the title is shown, with a visible replacement at worst


def test_a_prompt_of_invalid_utf8_runs_and_is_recorded(tmp_path: Path) -> None:
    nova = Path(sys.executable).with_name("nova")
    env = {**os.environ, "NOVA_HOME": str(tmp_path / "home")}
    prompt = b"explain \xff\xfe this"
    done = subprocess.run([str(nova), "run", "--provider", "demo", "--json", prompt], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    metas, _ = list_sessions(tmp_path / "home")
    session = Session.open(tmp_path / "home", metas[0].id, readonly=True)
    assert session.load_history()[0].text == os.fsdecode(prompt)


def test_the_ui_stream_carries_any_text_as_valid_utf8() -> None:
    import json

    from nova.server.ui_stream import sse

    for text in TEXTS:
        frame = sse({"type": "text-delta", "delta": text})
        payload = frame.decode("utf-8").removeprefix("data: ").strip()
        assert json.loads(payload)["delta"] == text
