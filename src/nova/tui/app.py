"""`NovaTUI`: the terminal UI (TUI-1). A conversation that streams, tool calls that fold, and the context
bar right above the input.

The agent runs through the same `SessionHub` as the server — each session on its own thread, events
delivered to the app with `call_from_thread` — so the bar shows the figure every other surface shows.

Keys: Enter sends; Ctrl-C cancels the running turn (the session stays, recorded up to that point);
Ctrl-Q quits. A tool call that needs approval is answered with one key: y (once), a (this tool for the
rest of the session: it ends when you leave the session with /new or /resume), n or Escape (no). The bottom line shows the model, the context figure, and the
session's cost and cache hit rate (`nova.present.figures`, the numbers `nova run` prints); while the model has
not answered, a line above the bar counts the wait, and each retry is a notice. Slash commands: /compact [focus], /context, /memory …, /remember …, /sessions,
/resume [ID|last] (no argument: a list of this project's recent sessions to choose from), /new, /help.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

from nova import events as ev
from nova.agent.context_runtime import ContextRuntime
from nova.agent.project_trust import start_warnings
from nova.context.budget import budget_for
from nova.context.picture import text_picture
from nova.context.report import distinct_labels, render_context
from nova.context.state import TASK_STATE_COMMANDS
from nova.errors import CommandError, NovaError
from nova.host.hub import SessionHub
from nova.memory.config import parse_memory_config
from nova.memory.slash import handle_memory_slash
from nova.memory.store import MemoryStore
from nova.messages import Message
from nova.model import Usage
from nova.present.figures import Figures, session_cost
from nova.present.text import terminal_safe
from nova.sessions.meta import title_from_prompt
from nova.sessions.recent import recent_sessions
from nova.tools.approval import Answer
from nova.tui.approval import PendingApproval, ScreenApprovals
from nova.tui.approval_prompt import ApprovalPrompt, Choice, answer_for_key
from nova.tui.gauge import ContextGauge
from nova.tui.session_picker import SessionPicker
from nova.tui.widgets import ContextBar, MessageBlock, ProgressLine, StatusFooter, ToolCall

__all__ = ["HELP", "NovaTUI"]

# Every line fits an 80-column terminal: a wrapped line would break the indented column.
HELP = """Commands:
  /compact [focus]        compact the conversation now
  /context                what is in the context, and the bar's figure
  /memory [show|approve|forget NAME]   long-term memory
  /remember TEXT          save a memory
  /skill NAME [request]   load a skill (its instructions) and ask with it
  /sessions               recorded sessions
  /resume [ID|last]       continue one (alone: choose from this project's)
  /new                    start another conversation
  /goal, /accept, /constraint, /approve, /revoke, /open, /done, /plan TEXT
                          the task state, pinned in every view
  /confirm N              confirm a rule Nova noticed in your messages
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
        self._prompt: ApprovalPrompt | None = None
        self._error_shown = False
        self._closing = False
        """Set when the app starts to close: a worker's events are no longer shown."""
        self._approvals: ScreenApprovals | None = None
        if isinstance(hub.approvals, ScreenApprovals):
            hub.approvals.prompt.show = lambda pending: self._from_worker(self._ask, pending)
            self._approvals = hub.approvals

    # -- layout ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="conversation")
        yield ProgressLine(id="progress")
        yield ContextBar(self.gauge, id="context-bar")
        yield Input(placeholder="Ask Nova…  (/help for commands)", id="prompt")
        yield StatusFooter(id="status")

    def on_mount(self) -> None:
        self._reset_gauge()
        self.query_one("#prompt", Input).focus()
        if self.session_id:
            self._open(self.session_id)
        else:
            self.notice(f"New conversation in {self.hub.options.cwd}. /help lists the commands.")
        for warning in start_warnings(self.hub.settings, self.hub.options.cwd):
            self.notice(warning, error=True)

    @property
    def conversation(self) -> VerticalScroll:
        return self.query_one("#conversation", VerticalScroll)

    @property
    def prompt_input(self) -> Input:
        return self.query_one("#prompt", Input)

    @property
    def bar(self) -> ContextBar:
        return self.query_one("#context-bar", ContextBar)

    @property
    def progress(self) -> ProgressLine:
        return self.query_one("#progress", ProgressLine)

    @property
    def footer(self) -> StatusFooter:
        return self.query_one("#status", StatusFooter)

    def _reset_gauge(self) -> None:
        """No conversation yet: the bar and the footer show the window the settings give."""
        budget = budget_for(self.hub.settings)
        self.gauge.reset(limit=budget.threshold, window=budget.window)
        self.bar.refresh_gauge()
        self.refresh_footer()

    def figures(self) -> Figures:
        """The footer's figures: the bar's context figure, and the session's recorded usage and cost."""
        status = ev.ContextUpdate(session_id=self.session_id or "", used=self.gauge.used if self.gauge.measured
                                  else 0, limit=self.gauge.limit, window=self.gauge.window,
                                  percent=self.gauge.percent)
        if self.session_id is None:
            model = self.hub.settings.model
            return Figures.of(model=model, status=status, usage=Usage(), cost=session_cost(model, 0.0))
        live = self.hub.live(self.session_id)
        meta = live.session.meta
        model = live.agent.model
        return Figures.of(model=model, status=status, usage=meta.usage,
                          cost=session_cost(model, meta.cost_usd, known=meta.cost_known), calls=meta.calls)

    def refresh_footer(self) -> None:
        try:
            self.footer.show(self.figures())
        except NovaError as exc:  # the session went away under us: say so rather than fail the screen
            self.footer.update(Text(f"figures unavailable: {exc}"))

    def notice(self, text: str, *, error: bool = False) -> None:
        # Notices carry file names, session titles and error messages: text, never a terminal command.
        self._add(Static(Text(terminal_safe(text)), classes="notice error" if error else "notice"))

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
                self.session_id = self.hub.create(title_from_prompt(text)).id
            self._from_worker(self._show_status)
            self.hub.start_turn(self.session_id, text, lambda e: self._from_worker(self.on_agent_event, e))
        except NovaError as exc:
            self._from_worker(self._turn_failed, str(exc))

    def _turn_failed(self, message: str) -> None:
        self.running = False
        self.notice(message, error=True)

    # -- approvals (the agent's thread waits while the person decides) ---------------------------------
    def _ask(self, pending: PendingApproval) -> None:
        self._pending = pending
        prompt = ApprovalPrompt(pending.request, self._answer_choice)
        self._prompt = prompt
        self.prompt_input.disabled = True  # the next key answers the question, not the input
        self._add(prompt)
        prompt.focus()

    def on_key(self, event: events.Key) -> None:
        # The prompt answers its own keys; this catches them when the focus went elsewhere (a click).
        if self._pending is not None and (choice := answer_for_key(event.key, event.character)) is not None:
            event.stop()
            self._answer_choice(choice)

    def _answer(self, text: str) -> None:
        choice = answer_for_key("", text.strip()[:1])
        if choice is None:
            self.notice("Answer y, a or n.", error=True)
            return
        self._answer_choice(choice)

    def _answer_choice(self, choice: Choice) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        self._close_prompt()
        request = pending.request
        covered = ScreenApprovals.describe(request)
        said = {"y": f"allowed once: {request.summary}",
                "a": f"allowed: {request.summary} — and {covered} for the rest of this session",
                "n": f"denied: {request.summary} — the model is told so"}[choice]
        self.notice(said)
        pending.answer({"y": Answer.ONCE, "a": Answer.SESSION, "n": Answer.DENY}[choice])

    def _close_prompt(self) -> None:
        if self._prompt is not None:
            self._prompt.remove()
            self._prompt = None
        self.prompt_input.disabled = False
        self.prompt_input.focus()

    def action_cancel_turn(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._close_prompt()
            self.notice(f"denied: {pending.request.summary} — the model is told so")
            pending.answer(Answer.DENY)
        if self.running and self.session_id:
            self.hub.cancel(self.session_id)
            self.notice("Cancelling the turn… (the session is kept)")
        else:
            self.notice("Nothing is running. Ctrl-Q quits.")

    # -- agent events (on the app's thread) -----------------------------------------------------------
    def on_agent_event(self, event: ev.Event | None) -> None:
        self.progress.apply(event)
        if event is None:
            self.running = False
            self._assistant = None
            self.refresh_footer()
            return
        if self.gauge.apply(event):
            self.bar.refresh_gauge()
        if isinstance(event, ev.ContextUpdate | ev.TurnFinished):
            self.refresh_footer()
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
            # The receipt in the words the CLI line prints (`nova.context.receipt.receipt_line`).
            done = f"compaction done {event.receipt_text}" if event.receipt_text else \
                f"compacted: {event.tokens_before:,} → {event.tokens_after:,} tokens"
            if event.declined:  # nothing changed, and nothing went wrong
                self.notice(f"compaction declined: {event.error}")
            else:
                self.notice(done if event.ok else f"compaction failed: {event.error}", error=not event.ok)
        elif isinstance(event, ev.RetryScheduled):
            self.notice(event.describe())
        elif isinstance(event, ev.ErrorEvent):
            self._error_shown = True
            self.notice(f"{event.kind}: {event.error}", error=True)
        elif isinstance(event, ev.TurnStarted):
            self._error_shown = False
        elif isinstance(event, ev.TurnFinished) and event.stop_reason not in ("end_turn", "stop_sequence") \
                and not (event.stop_reason == "error" and self._error_shown):  # an error is said once
            self.notice(f"turn ended: {event.stop_reason}")

    def _take_call(self, tool_use_id: str) -> ToolCall | None:
        return self._tools.pop(tool_use_id) if tool_use_id in self._tools else None

    def _show_status(self) -> None:
        if self.session_id is None:
            return
        self.gauge.apply(self.hub.status(self.session_id))
        self.bar.refresh_gauge()
        self.refresh_footer()

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
            self._leave_session()
            self.session_id = None
            self.conversation.remove_children()
            self._reset_gauge()
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
            unsubscribe = live.agent.bus.subscribe(lambda e: self._from_worker(self.on_agent_event, e))
            try:
                changed, status = self.hub.compact(self.session_id, focus)
            finally:
                unsubscribe()
        except NovaError as exc:
            self._from_worker(self.notice, str(exc), error=True)
            return
        self._from_worker(self.notice, f"compacted: now {status.percent:.1f}% of the threshold" if changed
                              else "nothing to compact")

    def _show_context(self) -> None:
        assert self.session_id is not None
        report = self.hub.context(self.session_id)
        runtime = self.hub.live(self.session_id).agent.extensions.get(ContextRuntime)
        if runtime is not None and report["manifest"] is not None:
            # The same compile as the API's /context and the bar: the history as the next call sends it.
            agent = self.hub.live(self.session_id).agent
            compiled = runtime.compile(list(agent.history), system=agent.system_prompt, tools=agent.tools.specs())
            # The window at a glance (one stacked bar by kind), then the manifest's rows.
            shown = Text()
            for text, style in text_picture(compiled.manifest, width=max(20, min(80, self.size.width - 40))):
                shown.append(terminal_safe(text), style=style or "")
            shown.append("\n" + terminal_safe(render_context(compiled, width=max(60, self.size.width - 6))))
            self._add(Static(shown, classes="notice context"))
            return
        lines = [f"context {report['percent']:.1f}% — {report['used']:,} of {report['limit']:,} tokens "
                 f"(compaction threshold; window {report['window']:,})",
                 f"manifest {report['manifest_status']}", "estimated per segment:"]
        labels = distinct_labels([str(s["id"]) for s in report["segments"]], 24)
        lines += [f"  {s['tokens']:>7,}  {s['class']:<11} {label:<24} {s['reason'][:60]}"
                  for s, label in zip(report["segments"], labels, strict=True)]
        self.notice("\n".join(lines))

    def _resume(self, which: str) -> None:
        if self.running:
            self.notice("A turn is running; cancel it first.", error=True)
            return
        if not which:
            self._pick_session()
            return
        target = which
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

    def _pick_session(self) -> None:
        recent = recent_sessions(self.hub.sessions(), self.hub.options.cwd)
        if not recent:
            self.notice(f"No recorded session of this project ({self.hub.options.cwd}) to resume.", error=True)
            return
        for old in self.query(SessionPicker):  # one list at a time
            old.remove()

        def chosen(session_id: str | None) -> None:
            picker.remove()
            self.prompt_input.focus()
            if session_id is None:
                self.notice("Resume cancelled.")
            elif self.running:
                self.notice("A turn is running; cancel it first.", error=True)
            else:
                self._open(session_id)

        picker = SessionPicker(recent, chosen, current=self.session_id)
        self._add(picker)
        picker.focus()

    def _open(self, session_id: str) -> None:
        try:
            live = self.hub.live(session_id)
        except NovaError as exc:  # another process is writing it, or its record cannot be read
            if self.session_id == session_id:  # at start-up: go on as a new conversation
                self.session_id = None
            self.notice(str(exc), error=True)
            return
        if session_id != self.session_id:
            self._leave_session()
        self.conversation.remove_children()
        self.session_id = session_id
        for message in live.agent.history:
            self._replay(message)
        self.notice(f"Resumed session {session_id}.")
        self._show_status()

    def _leave_session(self) -> None:
        """The person moves on from the current session: its "allow for this session" answers end."""
        if self.session_id is not None and self._approvals is not None:
            self._approvals.end(self.session_id)

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

    def _from_worker(self, callback: Any, *args: Any, **kwargs: Any) -> None:
        """Run `callback` on the app's thread, from a worker's (the turn's, a compaction's). Once the app is
        closing nothing more is shown: the worker goes on to its next step, where it sees the cancel."""
        if self._closing:
            return
        try:
            self.call_from_thread(callback, *args, **kwargs)
        except Exception:
            if not self._closing:
                raise  # a callback that failed while the app still runs is a fault to see

    async def on_unmount(self) -> None:
        # Off the event loop: a turn's thread may be waiting on the loop to show its last event, and it
        # must get past that to reach its next step and stop; closing on the loop waited for it forever.
        self._closing = True
        await asyncio.to_thread(self.hub.close)
