"""The TUI through Textual's pilot: type a message, see the streamed reply, the tool call and the bar."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual", reason="the TUI tests need the `tui` extra")

from nova.agent.demo import make_demo_project, make_demo_provider
from nova.model import ModelRequest, StreamEvent
from nova.settings import load_settings
from nova.tui.app import NovaTUI
from nova.tui.launch import make_hub
from nova.tui.widgets import ContextBar, MessageBlock, ToolCall

# The runs of two seconds or more (a pilot drives the app key by key) are in the slow tier
# (`@pytest.mark.slow`); the fast tier keeps the footer, the waits and retries, and a crash's exit.


def make_app(home: Path, project: Path, *, slow: bool = False) -> NovaTUI:
    env = {"NOVA_HOME": str(home)}
    settings = load_settings(env=env, overrides={"provider": "demo", "model": "nova-demo"})
    hub = make_hub(settings, cwd=project, env=env)
    if slow:
        hub.make_provider = SlowDemo
    return NovaTUI(hub)


class SlowDemo:
    """The demo model, streaming slowly enough for a person (or a test) to press Ctrl-C mid-turn."""

    name = "demo"

    def __init__(self) -> None:
        self.inner = make_demo_provider()

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        for event in self.inner.stream(request):
            time.sleep(0.05)
            yield event


async def wait_until(pilot, condition, *, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out waiting for the TUI")


@pytest.mark.slow
def test_type_a_message_see_the_reply_and_the_bar(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(type_a_message(nova_home, tmp_path))


@pytest.mark.slow
def test_ctrl_c_cancels_the_turn_and_keeps_the_session(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(cancel_a_turn(nova_home, tmp_path))


async def type_a_message(nova_home: Path, tmp_path: Path) -> None:
    project = make_demo_project(tmp_path / "project")
    app = make_app(nova_home, project)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.click("#prompt")
        await pilot.press(*"what is here?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running and any(
            b.role == "assistant" and "offline demo model" in b.text for b in app.query(MessageBlock)))
        blocks = list(app.query(MessageBlock))
        assert blocks[0].role == "user" and blocks[0].text == "what is here?"
        calls = list(app.query(ToolCall))
        assert calls and all(c.collapsed for c in calls)
        assert calls[0].title.startswith("✓ glob(")
        # The bar above the input shows the session's one figure.
        assert app.session_id is not None
        status = app.hub.live(app.session_id).status()
        bar = app.query_one(ContextBar)
        assert app.gauge.percent == status.percent and app.gauge.used == status.used
        assert f"context {status.percent:.1f}%" in str(bar.render())
        assert bar.region.y < app.query_one("#prompt").region.y  # above the input
        # Slash commands answer without the model.
        await pilot.press(*"/context")
        await pilot.press("enter")
        await pilot.pause(0.1)
        await pilot.press(*"/sessions")
        await pilot.press("enter")
        await pilot.pause(0.1)
        texts = [str(w.render()) for w in app.query(".notice")]
        # /context shows the window by kind, then the compiler's manifest headed by the same figure as the bar.
        assert any(t.startswith("window ") and "\ncontext:" in t
                   and f"({status.percent:.1f}% of the compaction threshold" in t for t in texts)
        assert any(app.session_id in t for t in texts)


@contextlib.asynccontextmanager
async def a_running_turn(nova_home: Path, tmp_path: Path) -> AsyncIterator[tuple[NovaTUI, Any, Path]]:
    """The app, its pilot and the project, with the demo task's turn streaming (its first tool call shown)."""
    from nova.agent.demo import DEMO_PROMPT

    project = make_demo_project(tmp_path / "project")
    app = make_app(nova_home, project, slow=True)
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one("#prompt").value = DEMO_PROMPT  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.running and len(app.query(ToolCall)) >= 1)
        yield app, pilot, project


async def cancel_a_turn(nova_home: Path, tmp_path: Path) -> None:
    async with a_running_turn(nova_home, tmp_path) as (app, pilot, project):
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not app.running)
        notices = [str(w.render()) for w in app.query(".notice")]
        assert "turn ended: cancelled" in notices
        assert not (project / "calc" / "stats.py").read_text().count("sum(values) / len(values)")
        assert app.is_running  # Ctrl-C did not quit the app
        session_id = app.session_id
        assert session_id is not None
        # The session is still there and takes the next message.
        await pilot.press(*"what is here?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running and any(
            "offline demo model" in b.text for b in app.query(MessageBlock)))
        assert app.session_id == session_id
    assert os.path.isdir(nova_home / "sessions" / session_id)


@pytest.mark.slow
def test_task_state_commands_pin_a_constraint_and_context_shows_the_manifest(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(task_state_and_context(nova_home, tmp_path))


def _notices(app: NovaTUI) -> list[str]:
    from textual.widgets import Static

    return [str(w.render()) for w in app.query(Static) if w.has_class("notice")]


async def task_state_and_context(nova_home: Path, tmp_path: Path) -> None:
    project = make_demo_project(tmp_path / "project")
    app = make_app(nova_home, project)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.click("#prompt")
        for line in ("what is here?", "/constraint never push to main", "/context"):
            await pilot.press(*line)
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.running)
            await pilot.pause(0.1)
        notices = "\n".join(_notices(app))
        assert "never push to main" in notices  # the pinned task state, as the command answered
        assert "always-on" in notices and "segment" in notices  # /context renders the manifest
        # The constraint reaches the model in every later view (pinned, CTX-4).
        await pilot.press(*"and now?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running and len(list(app.query(MessageBlock))) >= 4)
        agent = app.hub.live(app.session_id).agent
        request = agent.build_request(agent.history)
        assert any("never push to main" in m.text for m in request.messages)


@pytest.mark.slow
def test_a_command_waits_for_the_persons_approval(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(approve_and_deny(nova_home, tmp_path))


async def approve_and_deny(nova_home: Path, tmp_path: Path) -> None:
    from nova.testing import ScriptedProvider, call, reply
    from nova.tui.approval_prompt import ApprovalPrompt

    project = tmp_path / "project"
    project.mkdir()
    script = ScriptedProvider([
        reply("Creating the first file.", [call("bash", command="touch first")]),
        reply("Done with the first."),
        reply("Creating the second file.", [call("bash", command="touch second")]),
        reply("The second was refused."),
        reply("Creating the third file.", [call("bash", command="touch third")]),
        reply("Done with the third."),
        reply("Creating the fourth file.", [call("bash", command="touch fourth")]),
        reply("Done with the fourth."),
    ])
    app = make_app(nova_home, project)
    app.hub.make_provider = lambda: script
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.click("#prompt")
        for prompt, answer in (("make the first file", "y"), ("make the second file", "n"),
                               ("make the third file", "a")):
            await pilot.press(*prompt)
            await pilot.press("enter")
            await wait_until(pilot, lambda: app._pending is not None and bool(app.query(ApprovalPrompt)))
            shown = str(app.query_one(ApprovalPrompt).render())
            # What the call does, why the person is asked, and the three keys.
            assert "Allow bash to run this command?" in shown and f"touch {prompt.split()[2]}" in shown
            assert "asked because bash can change files or run commands" in shown
            assert "y = yes, once" in shown and "a = always allow bash in this session" in shown
            assert "n = no" in shown and "no Enter" in shown
            await pilot.press(answer)  # one key, no Enter
            await wait_until(pilot, lambda: not app.running)
            assert not app.query(ApprovalPrompt) and not app.prompt_input.disabled
        # After `a`, bash runs without asking for the rest of the session.
        await pilot.press(*"make the fourth file")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running)
        assert app._pending is None
        notices = "\n".join(_notices(app))
        assert "allowed once: bash: touch first" in notices and "denied: bash: touch second" in notices
        assert "and every bash call for the rest of this session" in notices
    assert (project / "first").exists(), "approved: the command ran"
    assert not (project / "second").exists(), "denied: the command never started"
    assert (project / "third").exists() and (project / "fourth").exists(), "always: asked once"
    denied = [r for m in app.hub.live(app.session_id).agent.history for r in m.tool_results() if r.is_error]
    assert len(denied) == 1 and "declined" in denied[0].content.lower()


@pytest.mark.slow
def test_resume_replays_a_session_with_tool_calls(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(resume_with_tool_calls(nova_home, tmp_path))


async def resume_with_tool_calls(nova_home: Path, tmp_path: Path) -> None:
    project = make_demo_project(tmp_path / "project")
    first = make_app(nova_home, project)
    async with first.run_test(size=(120, 40)) as pilot:
        await pilot.click("#prompt")
        await pilot.press(*"what is here?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not first.running and any(
            "offline demo model" in b.text for b in first.query(MessageBlock)))
        recorded = first.session_id
    assert first.return_code in (0, None)
    # A new process (here: a new app on the same home) resumes it: every call comes back finished.
    second = make_app(nova_home, project)
    async with second.run_test(size=(120, 40)) as pilot:
        await pilot.click("#prompt")
        await pilot.press(*"/resume last")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert second.session_id == recorded
        calls = list(second.query(ToolCall))
        assert calls and all(c.finished for c in calls)
        assert calls[0].title.startswith("✓ glob(") and calls[0].output
        assert any(t.startswith("Resumed session") for t in _notices(second))
        assert second.is_running
    assert second.return_code in (0, None)


@pytest.mark.slow
def test_resume_without_an_argument_lists_this_projects_sessions_to_choose_from(nova_home: Path,
                                                                                tmp_path: Path) -> None:
    asyncio.run(resume_picker(nova_home, tmp_path))


async def resume_picker(nova_home: Path, tmp_path: Path) -> None:
    from nova.tui.session_picker import SessionPicker

    project = make_demo_project(tmp_path / "project")
    elsewhere = make_demo_project(tmp_path / "elsewhere")
    first = make_app(nova_home, project)
    async with first.run_test(size=(120, 40)) as pilot:
        await pilot.click("#prompt")
        await pilot.press(*"what is here?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not first.running and first.session_id is not None)
        worked = first.session_id
    def created(where: Path, title: str) -> str:
        hub = make_app(nova_home, where).hub
        try:
            return hub.create(title).id
        finally:
            hub.close()

    newer = created(project, "a newer one")
    created(elsewhere, "another project's")
    app = make_app(nova_home, project)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.click("#prompt")
        await pilot.press(*"/resume")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.query(SessionPicker)))
        picker = app.query_one(SessionPicker)
        rows = [str(picker.get_option_at_index(i).prompt) for i in range(picker.option_count)]
        # This project's two sessions, newest first; the other project's is not offered.
        assert len(rows) == 2 and app.focused is picker
        assert rows[0].startswith(f"1. {newer} · a newer one · 0 messages · ")
        assert rows[1].startswith(f"2. {worked} · what is here? · ")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.query(SessionPicker))
        assert app.session_id is None and "Resume cancelled." in _notices(app)
        await pilot.press(*"/resume")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.query(SessionPicker)))
        await pilot.press("2")  # one digit chooses its row
        await wait_until(pilot, lambda: app.session_id == worked)
        assert not app.query(SessionPicker) and app.focused is app.prompt_input
        calls = list(app.query(ToolCall))
        assert calls and all(c.finished for c in calls)
        await pilot.press(*"/resume")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.query(SessionPicker)))
        assert str(app.query_one(SessionPicker).get_option_at_index(1).prompt).endswith("(open now)")
        await pilot.press("enter")  # Enter takes the highlighted row, the first
        await wait_until(pilot, lambda: app.session_id == newer)
        assert any(t == f"Resumed session {newer}." for t in _notices(app))


def test_a_crash_in_the_tui_is_a_non_zero_exit(nova_home: Path, tmp_path: Path) -> None:
    from nova.tui.launch import run_app

    class Broken(NovaTUI):
        def on_mount(self) -> None:
            raise RuntimeError("a handler failed")

    assert run_app(make_app(nova_home, tmp_path), headless=True, auto_pilot=_quit_soon) == 0
    app = make_app(nova_home, tmp_path)
    broken = Broken(app.hub)
    assert run_app(broken, headless=True) == 1


async def _quit_soon(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause(0.1)
    await pilot.press("ctrl+q")


def test_the_footer_shows_model_context_cost_and_cache(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(footer_figures(nova_home, tmp_path))


async def footer_figures(nova_home: Path, tmp_path: Path) -> None:
    from nova.model import Usage
    from nova.present.figures import Figures, status_line
    from nova.providers.pricing import cost_usd
    from nova.testing import ScriptedProvider, reply
    from nova.tui.widgets import StatusFooter

    env = {"NOVA_HOME": str(nova_home)}
    settings = load_settings(env=env, overrides={"provider": "demo", "model": "claude-sonnet-4-5"})
    hub = make_hub(settings, cwd=tmp_path, env=env)
    usage = Usage(input_tokens=1_000, cache_read_tokens=3_000, output_tokens=100)
    hub.make_provider = lambda: ScriptedProvider([reply("First.", usage=usage), reply("Second.", usage=usage)])
    app = NovaTUI(hub)
    async with app.run_test(size=(160, 40)) as pilot:
        footer = app.query_one(StatusFooter)
        bar = str(app.query_one(ContextBar).render())
        # Before the first call: the window the settings give, never "0 / 0 tokens".
        assert "0 / 0" not in bar and "nothing sent yet · window 200,000 · compacts at" in bar
        assert footer.line.startswith("claude-sonnet-4-5 · context: nothing sent yet (window 200,000)")
        await pilot.click("#prompt")
        for prompt in ("one", "two"):
            await pilot.press(*prompt)
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.running)
        await pilot.pause(0.1)
        live = app.hub.live(app.session_id)
        status = live.status()
        expected_cost = 2 * cost_usd(usage, "claude-sonnet-4-5")  # type: ignore[operator]
        assert live.session.meta.cost_usd == pytest.approx(expected_cost)
        # The same function as `nova run`'s closing line, on the session's running figures.
        assert footer.line == status_line(Figures(model="claude-sonnet-4-5", used=status.used, limit=status.limit,
                                                  window=status.window, cost=live.session.meta.cost_usd,
                                                  cache_hit_rate=0.75, calls=live.session.meta.calls))
        assert footer.line.endswith(" · 2 model calls")  # the demo model extracts no memories
        assert f"context {status.used:,}/{status.limit:,} ({status.percent:.1f}%)" in footer.line
        assert f"cost ${expected_cost:.4f}" in footer.line and "cache hits 75%" in footer.line
        assert f"{status.used:,} / {status.limit:,} tokens" in str(app.query_one(ContextBar).render())
        assert footer.region.y > app.query_one("#prompt").region.y  # the bottom line


def test_waits_and_retries_are_shown_and_the_error_once(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(waits_and_retries(nova_home, tmp_path))


async def waits_and_retries(nova_home: Path, tmp_path: Path) -> None:
    from nova.errors import RateLimited
    from nova.testing import FunctionProvider
    from nova.tui.widgets import ProgressLine

    calls: list[int] = []

    def answer(request: object) -> str:
        calls.append(1)
        if len(calls) in (1, 2, 4, 5, 6, 7):  # the first turn: two failures; the second: never answers
            raise RateLimited("slow down", status=429, retry_after=0.05)
        time.sleep(0.6)  # a slow first token: the progress line shows the wait
        return "here at last"

    app = make_app(nova_home, tmp_path)
    app.hub.make_provider = lambda: FunctionProvider(answer)
    async with app.run_test(size=(120, 40)) as pilot:
        progress = app.query_one(ProgressLine)
        assert not progress.display
        await pilot.click("#prompt")
        await pilot.press(*"hello?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "waiting for the model" in progress.text and len(calls) == 3)
        assert progress.display
        await wait_until(pilot, lambda: not app.running)
        assert not progress.display
        notices = _notices(app)
        assert [n for n in notices if "retrying" in n] == [
            "retrying in 0.1 s (attempt 2 of 4): 429 slow down",
            "retrying in 0.1 s (attempt 3 of 4): 429 slow down",
        ]
        assert any("here at last" in b.text for b in app.query(MessageBlock))
        # A provider that never answers: three retries, then the error, said once.
        await pilot.press(*"again?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running)
        notices = _notices(app)
        assert sum("slow down" in n and "retrying" not in n for n in notices) == 1
        assert "turn ended: error" not in notices
        assert not progress.display


@pytest.mark.slow
def test_context_opens_with_the_window_by_kind_and_rows_keep_their_names(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(context_picture(nova_home, tmp_path))


async def context_picture(nova_home: Path, tmp_path: Path) -> None:
    import re

    project = make_demo_project(tmp_path / "a-project-folder-with-a-long-name")
    (project / ".git").mkdir(exist_ok=True)
    (project / "AGENTS.md").write_text("Run the tests with pytest.\n")
    package = project / "calc"
    (package / "AGENTS.md").write_text("Keep functions small in calc.\n")
    app = make_app(nova_home, package)
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.click("#prompt")
        for line in ("what is here?", "/context"):
            await pilot.press(*line)
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.running)
        await pilot.pause(0.2)
        shown = next(str(w.render()) for w in app.query(".context"))
        status = app.hub.live(app.session_id).status()
        bar, legend, *rows = shown.splitlines()
        assert bar.startswith("window ") and f"{status.used:,} used of {status.window:,}" in bar
        assert {"S", "T", "R", "H", "·"} <= set(bar)
        figures = {kind: int(n.replace(",", "")) for _, kind, n in re.findall(r"(\S) (\w+) ([\d,]+)", legend)}
        assert {"system", "tools", "rules", "history", "free"} <= set(figures)
        # The kinds sum to the manifest's figure, which is the bar's; free is the rest of the window.
        assert sum(n for kind, n in figures.items() if kind != "free") == status.used
        assert figures["free"] == status.window - status.used
        # Below it the table, headed by the same figure; the two rule files keep distinct labels.
        assert rows[0].startswith(f"context: {status.used:,} of {status.limit:,} tokens")
        labels = [row.split()[0] for row in rows[2:] if row.startswith("rules:")]
        assert len(labels) == 2 and labels[0] != labels[1]
        assert any(label.endswith("calc/AGENTS.md") for label in labels)


HOSTILE = "evil\x1b[31mRED\x1b]0;PWNED\x07\x1b[2J\rhidden\x9b1m\u202e"
CLICKABLE = "[@click=app.quit]quit"


def test_file_names_tool_output_and_model_text_are_shown_as_text(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(hostile_text(nova_home, tmp_path))


async def hostile_text(nova_home: Path, tmp_path: Path) -> None:
    from textual.widgets._collapsible import CollapsibleTitle

    from nova.testing import ScriptedProvider, call, reply

    project = tmp_path / "project"
    project.mkdir()
    name = f"{CLICKABLE}{HOSTILE}.txt"
    (project / name).write_text(f"inside {HOSTILE} {CLICKABLE}\n")
    script = ScriptedProvider([reply(f"Reading {name}.", [call("read_file", path=name)]), reply(f"Done: {HOSTILE}")])
    app = make_app(nova_home, project)
    app.hub.make_provider = lambda: script
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.click("#prompt")
        await pilot.press(*"read it")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running and bool(app.query(ToolCall))
                         and all(c.finished for c in app.query(ToolCall)))
        await pilot.pause(0.1)
        shown = [str(b.render()) for b in app.query(MessageBlock)]
        [tool] = list(app.query(ToolCall))
        shown += [str(tool.query_one(".tool-output").render()), str(tool.query_one(".tool-input").render())]
        title = tool.query_one(CollapsibleTitle).render()
        shown.append(str(title))
        for text in shown:
            for char in ("\x1b", "\x9b", "\u202e", "\r", "\x07"):
                assert char not in text, f"{char!r} reached the screen: {text!r}"
        assert any("\\x1b]0;PWNED" in text for text in shown)
        # The title is Textual markup: a file name's `[@click=…]` is shown, never made a clickable action.
        assert CLICKABLE in str(title)
        assert app.is_running, "nothing in the text quit the app"


def test_always_allow_ends_with_the_session_on_new_and_resume(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(grants_end_with_their_session(nova_home, tmp_path))


async def grants_end_with_their_session(nova_home: Path, tmp_path: Path) -> None:
    from nova.testing import ScriptedProvider, call, reply
    from nova.tui.approval_prompt import ApprovalPrompt

    project = tmp_path / "project"
    project.mkdir()
    steps = []
    for name in ("one", "two", "three", "four", "five"):
        steps += [reply(f"Creating {name}.", [call("bash", command=f"touch {name}")]), reply(f"Done with {name}.")]
    script = ScriptedProvider(steps)
    app = make_app(nova_home, project)
    app.hub.make_provider = lambda: script

    async def turn(prompt: str, *, answer: str | None) -> bool:
        """Send `prompt`; answer the approval with `answer` if one is asked. Whether one was asked."""
        await pilot.press(*prompt)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running or app._pending is not None)
        asked = app._pending is not None
        if asked:
            assert answer is not None, f"{prompt!r} asked for approval"
            await wait_until(pilot, lambda: bool(app.query(ApprovalPrompt)))
            await pilot.press(answer)
        await wait_until(pilot, lambda: not app.running)
        return asked

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.click("#prompt")
        assert await turn("make one", answer="a")
        first = app.session_id
        assert not await turn("make two", answer=None), "allowed for this session: not asked again"
        await pilot.press(*"/new")
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert await turn("make three", answer="n"), "a new session starts without the old session's grant"
        assert app.session_id != first
        await pilot.press(*f"/resume {first}")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.session_id == first)
        assert await turn("make four", answer="y"), "the grant ended when the session was left"
        assert await turn("make five", answer="y"), "`y` is once: asked again"
    assert all((project / n).exists() for n in ("one", "two", "four", "five"))
    assert not (project / "three").exists()


def test_a_compaction_notice_is_its_receipt_in_the_cli_lines_words(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(compaction_notice(nova_home, tmp_path))


async def compaction_notice(nova_home: Path, tmp_path: Path) -> None:
    from nova import events as ev
    from nova.context.economy import prices_for
    from nova.context.receipt import compaction_receipt, receipt_line

    receipt = compaction_receipt(tokens_before=150_000, tokens_after=40_000, summary_input_tokens=150_000,
                                 summary_output_tokens=3_000, prices=prices_for("claude-sonnet-4-5"))
    app = make_app(nova_home, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.on_agent_event(ev.CompactionEnd(session_id="s", ok=True, tokens_before=150_000, tokens_after=40_000,
                                            receipt=receipt.to_json(), receipt_text=receipt_line(receipt)))
        await pilot.pause(0.05)
        assert f"compaction done {receipt_line(receipt)}" in _notices(app)
        # A `/compact` the controller declined (it would have grown the view) is said as such, not as a failure.
        app.on_agent_event(ev.CompactionEnd(session_id="s", ok=False, declined=True, tokens_before=900,
                                            tokens_after=900, error="the summary would not make the view smaller"))
        await pilot.pause(0.05)
        assert "compaction declined: the summary would not make the view smaller" in _notices(app)
        assert "compaction failed" not in _notices(app)


def test_the_footer_fits_an_80_column_terminal_whole(nova_home: Path, tmp_path: Path) -> None:
    asyncio.run(footer_at_80_columns(nova_home, tmp_path))


async def footer_at_80_columns(nova_home: Path, tmp_path: Path) -> None:
    """At 80 columns the whole line does not fit: the footer drops what the bar above already shows
    (the context figure), then the model, but never cuts a figure in the middle ("· 4" with its unit
    cut off); widened again, it shows everything."""
    from nova.model import Usage
    from nova.testing import ScriptedProvider, reply
    from nova.tui.widgets import StatusFooter

    env = {"NOVA_HOME": str(nova_home)}
    settings = load_settings(env=env, overrides={"provider": "demo", "model": "claude-sonnet-4-5-20250929"})
    hub = make_hub(settings, cwd=tmp_path, env=env)
    usage = Usage(input_tokens=1_000, cache_read_tokens=3_000, output_tokens=100)
    hub.make_provider = lambda: ScriptedProvider([reply("First.", usage=usage)])
    app = NovaTUI(hub)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        bar = app.query_one(ContextBar)
        # The bar gives way to its words: the threshold is the end of the line, and it is shown.
        shown = str(bar.render())
        assert shown.rstrip().endswith("compacts at 176,000") and len(shown) <= bar.size.width - 2, shown
        await pilot.click("#prompt")
        await pilot.press(*"one")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.running)
        await pilot.pause(0.1)
        footer = app.query_one(StatusFooter)
        shown = str(footer.render())
        assert len(footer.line) <= 78 and "…" not in shown, shown
        assert "cost $" in footer.line and "cache hits 75%" in footer.line and footer.line.endswith(" · 1 call")
        await pilot.resize_terminal(200, 24)
        await pilot.pause(0.2)
        assert footer.line.startswith("claude-sonnet-4-5-20250929 · context ") and " · 1 model call" in footer.line


def test_help_fits_an_80_column_terminal(nova_home: Path, tmp_path: Path) -> None:
    """/help's second column is lined up by spaces: a line wider than the terminal wraps and breaks it."""
    from nova.tui.app import HELP

    # The notice is padded by one column on each side of an 80-column screen.
    assert max(len(line) for line in HELP.splitlines()) <= 78
    for command in ("/compact", "/context", "/memory", "/remember", "/skill", "/sessions", "/resume", "/new",
                    "/goal", "/plan", "/confirm"):
        assert command in HELP


@pytest.mark.slow
def test_ctrl_q_mid_turn_quits(nova_home: Path, tmp_path: Path) -> None:
    """Quitting while a turn streamed closed the hub on the app's event loop, which the turn's thread was
    waiting on to show its next event: the turn never reached its next step to see the cancel, and the
    TUI hung with "the turn did not stop in time"."""
    import threading

    finished = threading.Event()

    def run() -> None:
        asyncio.run(quit_mid_turn(nova_home, tmp_path))
        finished.set()

    runner = threading.Thread(target=run, daemon=True)  # a hang must not hold the test process
    runner.start()
    runner.join(timeout=120)  # a bound for a hang, not a timing
    assert finished.is_set(), "the TUI did not quit on Ctrl-Q while a turn ran"


async def quit_mid_turn(nova_home: Path, tmp_path: Path) -> None:
    async with a_running_turn(nova_home, tmp_path) as (app, pilot, project):
        await pilot.press("ctrl+q")
    # The turn stopped at its next step and the session closed cleanly: it opens again from its record.
    assert app.session_id is not None
    reopened = make_app(nova_home, project).hub
    try:
        assert reopened.live(app.session_id).status().used > 0
    finally:
        reopened.close()
