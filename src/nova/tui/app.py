"""`NovaTUI`: the terminal UI (TUI-1). A conversation that streams, tool calls that fold, and the context
bar right above the input.

The agent runs through the same `SessionHub` as the server — each session on its own thread, events
delivered to the app with `call_from_thread` — so the bar shows the figure every other surface shows.

Keys: Enter sends; Ctrl-C cancels the running turn (the session stays, recorded up to that point);
Ctrl-Q quits. Slash commands: /compact [focus], /context, /memory …, /remember …, /sessions,
/resume ID|last, /new, /help.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Input, Static

from nova import events as ev
from nova.commands.context import render_context
from nova.context.runtime import ContextRuntime
from nova.context.state import TASK_STATE_COMMANDS
from nova.errors import CommandError, NovaError
from nova.host import SessionHub
from nova.memory.config import parse_memory_config
from nova.memory.slash import handle_memory_slash
from nova.memory.store import MemoryStore
from nova.messages import Message
from nova.tui.approval import Approver, PendingApproval
from nova.tui.gauge import ContextGauge
from nova.tui.widgets import ContextBar, MessageBlock, ToolCall

__all__ = ["HELP", "NovaTUI"]

HELP = """Commands:
  /compact [focus]    compact the conversation now
  /context            what is in the context, and the figure the bar shows
  /memory [show|approve|forget NAME]   long-term memory;  /remember TEXT saves one
  /skill NAME [request]   load a skill (its instructions) and ask with it
  /sessions           recorded sessions;  /resume ID|last  continues one;  /new starts another
  /goal, /accept, /constraint, /approve, /revoke, /open, /done, /plan TEXT   the task state (pinned
                      in every view); /confirm N confirms a rule Nova noticed in your messages
Ctrl-C cancels the running turn; Ctrl-Q quits."""


class NovaTUI(App[None]):
    TITLE = "Nova"
    CSS = """
    #conversation { height: 1fr; padding: 0 1; }
    .message { margin: 1 0 0 0; }
    .notice { color: $text-muted; margin: 1 0 0 0; }
    .error { color: $error; }
    .tool-call { margin: 0; padding: 0; border: none; }
    .tool-output { color: $text-muted; }
    #prompt { dock: bottom; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "cancel_turn", "Cancel turn", priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, hub: SessionHub, *, session_id: str | None = None) -> None:
        super().__init__()
        self.hub = hub
        self.session_id = session_id
        self.gauge = ContextGauge()
        self.running = False
        self._assistant: MessageBlock | None = None
        self._tools: dict[str, ToolCall] = {}
        self._pending: PendingApproval | None = None
        approver = hub.options.ask
        if isinstance(approver, Approver):
            approver.show = lambda pending: self.call_from_thread(self._ask, pending)
            self._approver: Approver | None = approver
        else:
            self._approver = None

    # -- layout ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="conversation")
        yield ContextBar(self.gauge, id="context-bar")
        yield Input(placeholder="Ask Nova…  (/help for commands)", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#prompt", Input).focus()
        if self.session_id:
            self._open(self.session_id)
        else:
            self.notice(f"New conversation in {self.hub.options.cwd}. /help lists the commands.")

    @property
    def conversation(self) -> VerticalScroll:
        return self.query_one("#conversation", VerticalScroll)

    @property
    def bar(self) -> ContextBar:
        return self.query_one("#context-bar", ContextBar)

    def notice(self, text: str, *, error: bool = False) -> None:
        self._add(Static(Text(text), classes="notice error" if error else "notice"))

    def _add(self, widget: Any) -> None:
        self.conversation.mount(widget)
        self.conversation.scroll_end(animate=False)

    # -- input ----------------------------------------------------------------------------------------
    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.value = ""
        if self._pending is not None:
            self._answer(text)
            return
        if not text:
            return
        if text.startswith("/") and text.split(" ", 1)[0] != "/skill":  # `/skill NAME …` is a turn
            self.slash(text)
            return
        if self.running:
            self.notice("A turn is running; wait for it or press Ctrl-C to cancel it.")
            return
        self._add(MessageBlock("user", text))
        self.running = True
        self.run_worker(lambda: self._start_turn(text), thread=True, exclusive=False, group="turn")

    def _start_turn(self, text: str) -> None:
        try:
            if self.session_id is None:
                self.session_id = self.hub.create(" ".join(text.split())[:80]).id
            self.call_from_thread(self._show_status)
            self.hub.start_turn(self.session_id, text, lambda e: self.call_from_thread(self.on_agent_event, e))
        except NovaError as exc:
            self.call_from_thread(self._turn_failed, str(exc))

    def _turn_failed(self, message: str) -> None:
        self.running = False
        self.notice(message, error=True)

    # -- approvals (the agent's thread waits while the person decides) ---------------------------------
    def _ask(self, pending: PendingApproval) -> None:
        self._pending = pending
        self.notice(f"Allow {pending.request.summary}?  ({pending.request.reason})\n"
                    "  y = yes, once    a = always allow this tool in this session    n = no")

    def _answer(self, text: str) -> None:
        pending, choice = self._pending, text.strip().lower()[:1]
        if pending is None:
            return
        if choice not in ("y", "a", "n"):
            self.notice("Answer y, a or n.", error=True)
            return
        self._pending = None
        if choice == "a" and self._approver is not None:
            self._approver.always.add(pending.request.tool)
        self.notice("allowed" if choice in ("y", "a") else "denied: the model is told so")
        pending.answer(choice in ("y", "a"))

    def action_cancel_turn(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.answer(False)
        if self.running and self.session_id:
            self.hub.cancel(self.session_id)
            self.notice("Cancelling the turn… (the session is kept)")
        else:
            self.notice("Nothing is running. Ctrl-Q quits.")

    # -- agent events (on the app's thread) -----------------------------------------------------------
    def on_agent_event(self, event: ev.Event | None) -> None:
        if event is None:
            self.running = False
            self._assistant = None
            return
        if self.gauge.apply(event):
            self.bar.refresh_gauge()
        if isinstance(event, ev.TextDelta):
            if self._assistant is None:
                self._assistant = MessageBlock("assistant")
                self._add(self._assistant)
            self._assistant.append(event.text)
            self.conversation.scroll_end(animate=False)
        elif isinstance(event, ev.AssistantMessage):
            self._assistant = None
        elif isinstance(event, ev.ToolCallStarted):
            self._assistant = None
            call = ToolCall(event.tool_use_id, event.name, event.input)
            self._tools[event.tool_use_id] = call
            self._add(call)
        elif isinstance(event, ev.ToolCallFinished):
            if (finished := self._take_call(event.tool_use_id)) is not None:
                finished.finish(event.output, is_error=event.is_error)
        elif isinstance(event, ev.CompactionStart):
            self.notice(f"compacting {event.message_count} messages…")
        elif isinstance(event, ev.CompactionEnd):
            self.notice(f"compacted: {event.tokens_before:,} → {event.tokens_after:,} tokens" if event.ok
                        else f"compaction failed: {event.error}", error=not event.ok)
        elif isinstance(event, ev.ErrorEvent):
            self.notice(f"{event.kind}: {event.error}", error=True)
        elif isinstance(event, ev.TurnFinished) and event.stop_reason not in ("end_turn", "stop_sequence"):
            self.notice(f"turn ended: {event.stop_reason}")

    def _take_call(self, tool_use_id: str) -> ToolCall | None:
        return self._tools.pop(tool_use_id) if tool_use_id in self._tools else None

    def _show_status(self) -> None:
        if self.session_id is None:
            return
        self.gauge.apply(self.hub.status(self.session_id))
        self.bar.refresh_gauge()

    # -- slash commands -------------------------------------------------------------------------------
    def slash(self, text: str) -> None:
        command, _, rest = text.partition(" ")
        rest = rest.strip()
        if command in ("/memory", "/remember"):
            self._memory(text)
        elif command == "/help":
            self.notice(HELP)
        elif command == "/sessions":
            metas = self.hub.sessions()[:20]
            lines = [f"{'*' if m.id == self.session_id else ' '} {m.id}  {m.title[:60]}" for m in metas]
            self.notice("\n".join(lines) if lines else "No recorded sessions yet.")
        elif command == "/new":
            if self.running:
                self.notice("A turn is running; cancel it first.", error=True)
                return
            self.session_id = None
            self.conversation.remove_children()
            self.gauge.apply(ev.ContextUpdate(session_id="", used=0, limit=0, window=0, percent=0.0))
            self.bar.refresh_gauge()
            self.notice("New conversation.")
        elif command == "/resume":
            self._resume(rest)
        elif self.session_id is None:
            self.notice("Start a conversation first: there is no session yet.", error=True)
        elif command == "/compact":
            if self.running:
                self.notice("A turn is running; compact after it.", error=True)
                return
            self.run_worker(lambda: self._compact(rest), thread=True, group="compact")
        elif command == "/context":
            self._show_context()
        elif command in TASK_STATE_COMMANDS:
            runtime = self.hub.live(self.session_id).agent.extensions.get(ContextRuntime)
            if runtime is None:
                self.notice("task state needs the context compiler, which is not attached", error=True)
            else:
                try:
                    self.notice(runtime.command(text))
                except CommandError as exc:  # a malformed command: tell the user what it takes
                    self.notice(str(exc), error=True)
        else:
            self.notice(f"unknown command {command!r}. /help lists them.", error=True)

    def _memory(self, text: str) -> None:
        settings = self.hub.settings
        store = MemoryStore.for_workspace(home=settings.home, cwd=self.hub.options.cwd)
        config = parse_memory_config(settings.section("memory"), source=f"{settings.config_file} [memory]")
        answer = handle_memory_slash(text, store=store, config=config, session_id=self.session_id)
        if answer is not None:
            self.notice(answer.text, error=not answer.ok)

    def _compact(self, focus: str) -> None:
        assert self.session_id is not None
        try:
            live = self.hub.live(self.session_id)
            unsubscribe = live.agent.bus.subscribe(lambda e: self.call_from_thread(self.on_agent_event, e))
            try:
                changed, status = self.hub.compact(self.session_id, focus)
            finally:
                unsubscribe()
        except NovaError as exc:
            self.call_from_thread(self.notice, str(exc), error=True)
            return
        self.call_from_thread(self.notice, f"compacted: now {status.percent:.1f}% of the threshold" if changed
                              else "nothing to compact")

    def _show_context(self) -> None:
        assert self.session_id is not None
        report = self.hub.context(self.session_id)
        runtime = self.hub.live(self.session_id).agent.extensions.get(ContextRuntime)
        if runtime is not None and report["manifest"] is not None:
            # The same compile as the API's /context and the bar: the history as the next call sends it.
            agent = self.hub.live(self.session_id).agent
            self.notice(render_context(runtime.compile(list(agent.history), system=agent.system_prompt,
                                                       tools=agent.tools.specs())))
            return
        lines = [f"context {report['percent']:.1f}% — {report['used']:,} of {report['limit']:,} tokens "
                 f"(compaction threshold; window {report['window']:,})",
                 f"manifest {report['manifest_status']}", "estimated per segment:"]
        lines += [f"  {s['tokens']:>7,}  {s['class']:<11} {s['id'][:24]:<24} {s['reason'][:60]}"
                  for s in report["segments"]]
        self.notice("\n".join(lines))

    def _resume(self, which: str) -> None:
        if self.running:
            self.notice("A turn is running; cancel it first.", error=True)
            return
        target = which or "last"
        if target == "last":
            metas = self.hub.sessions()
            if not metas:
                self.notice("No recorded session to resume.", error=True)
                return
            target = metas[0].id
        try:
            self.hub.check(target)
        except NovaError as exc:
            self.notice(str(exc), error=True)
            return
        self._open(target)

    def _open(self, session_id: str) -> None:
        try:
            live = self.hub.live(session_id)
        except NovaError as exc:  # another process is writing it, or its record cannot be read
            if self.session_id == session_id:  # at start-up: go on as a new conversation
                self.session_id = None
            self.notice(str(exc), error=True)
            return
        self.conversation.remove_children()
        self.session_id = session_id
        for message in live.agent.history:
            self._replay(message)
        self.notice(f"Resumed session {session_id}.")
        self._show_status()

    def _replay(self, message: Message) -> None:
        if message.tool_results():
            for result in message.tool_results():
                if (call := self._take_call(result.tool_use_id)) is not None:
                    call.finish(result.content, is_error=result.is_error)
            return
        if message.has("summary"):
            self.notice("(earlier conversation summarized)")
            return
        if message.text:
            self._add(MessageBlock(message.role, message.text))
        for use in message.tool_uses():
            call = ToolCall(use.id, use.name, use.input)
            self._tools[use.id] = call
            self._add(call)

    async def on_unmount(self) -> None:
        self.hub.close()
