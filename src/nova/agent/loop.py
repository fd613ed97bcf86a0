"""The agent loop: one user turn is call → tools → call … until the model answers without a tool call.

The loop never crashes on model output: an unknown tool, arguments that are not JSON, a tool that
raises, or a call the permission policy refuses all come back to the model as error results. Provider
errors are classified (nova.errors): rate limits and overload are retried with bounded back-off;
everything else ends the turn with an `ErrorEvent` and re-raises.

The agent is built once, complete: the context engine, the prompt cache and memory plug in as
extensions (`nova.context.extensions`) given to the constructor, each hook a method with keyword-only typed
inputs, called in the extensions' declared order. `prepare_view` may shed history before each call
(compaction), `process_result` rewrites a tool result as it enters history (spill), `on_overflow` gets
one chance per user request to shrink history after a `ContextOverflow` (CMP-9), `compile_view` turns
history into the view sent, `prepare_request` places cache breakpoints and `on_call` sees each call.
Every size comes from the one `ContextBudget` the agent is given.

It is built from a few typed parts: who answers (`ModelBinding`), the tools with the permission policy
in front of them (`Toolbox`), the budget, the session's one `TokenLedger`, the session it runs in
(`SessionLink`: id, record, directory, event bus), the extensions and the bounds on a turn
(`RunLimits`); `nova.agent.builder.build_agent` makes them from the settings. Its clock
(`nova.agent.clock`) times the calls and waits out a retry's back-off, the same way in a test as in a
real run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from nova import events as ev
from nova.agent.calls import CallMeter, MeteredProvider, call_cost
from nova.agent.clock import SYSTEM_CLOCK, Clock
from nova.agent.parts import ModelBinding, RunLimits, Toolbox
from nova.context.budget import BudgetLines, ContextBudget
from nova.context.extensions import (
    CallRecord,
    CompiledView,
    CompileRequest,
    Extension,
    Extensions,
    LatePoller,
    TurnResult,
    ViewRequest,
)
from nova.context.overflow import second_overflow_message
from nova.errors import ContextOverflow, NovaError, ProviderError, ToolError
from nova.history.invariants import PairingChecker
from nova.messages import Message, Part, TextPart, ToolResultPart, ToolUsePart
from nova.model import ModelRequest, ModelResponse, ResponseDone, TextDelta, Usage
from nova.sessions.link import SessionLink
from nova.sessions.recorder import SessionRecorder
from nova.sessions.repair import repair_history
from nova.tokens import TokenLedger, context_percent
from nova.tokens.ledger import GROWTH_METADATA
from nova.tools.base import ToolContext, ToolOutput, resolve_delegate

__all__ = ["DENIED_PREFIX", "Agent", "CallRecord", "CompileRequest", "CompiledView", "SessionSink", "TurnResult", "ViewRequest"]

log = logging.getLogger(__name__)

DENIED_PREFIX = "Permission denied: "
"""How the result of a call the policy refused begins (the tool never ran); surfaces mark it denied."""

MAX_RETRIES = 3
MAX_BACKOFF_S = 30.0
INVALID_ARGUMENTS_KEY = "__invalid_arguments__"


class _Cancelled(Exception):
    """The user cancelled while the model was streaming: the partial answer is dropped."""


SessionSink = SessionRecorder
"""Where the loop records what happened (the session record implements it)."""


@dataclass
class _TurnState:
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0
    overflow_retried: bool = False
    sent: Sequence[Message] = ()
    """The messages of the latest request answered: the ledger learns from its real usage against them."""


class Agent(BudgetLines):
    def __init__(
        self,
        *,
        model: ModelBinding,
        toolbox: Toolbox,
        budget: ContextBudget,
        ledger: TokenLedger,
        session: SessionLink,
        extensions: Sequence[Extension] = (),
        system_prompt: str = "",
        history: Sequence[Message] = (),
        limits: RunLimits = RunLimits(),
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """`ledger` is the session's one token ledger (TOK-3): the loop records each reply's usage in it,
        once, and the extensions that measure (the context controller, the compiler) are given the same
        one, so the compaction decision, the CLI footer, the API and the UI read one figure."""
        # Every call goes through the session's meter (nova.agent.calls): the builder's, handed over as the
        # turn's metered provider, or one made here for an agent built by hand.
        if isinstance(model.provider, MeteredProvider):
            self.meter = model.provider.meter
        else:
            self.meter = CallMeter(model.provider, model=model.name, session=session.recorder)
        self.provider: MeteredProvider = self.meter.provider_for("turn")
        self.model = model.name
        self.cache = model.cache
        self.tools = toolbox.tools
        self.policy = toolbox.policy
        self.cwd = toolbox.cwd
        self.budget = budget
        self.ledger = ledger
        self.bus = session.bus
        self.session = session.recorder
        self.session_id = session.id
        self.session_dir = session.dir
        self.extensions = Extensions(extensions)
        self.system_prompt = system_prompt
        self.history: list[Message] = list(history)
        self.limits = limits
        self.clock = clock
        self._pairing = PairingChecker()
        """Checks each request before it is sent, redoing only what changed since the previous one."""
        self.cancel = threading.Event()

    def compact(self, focus: str = "") -> bool:
        """Compact now, whatever the threshold (`/compact`, `POST …/compact`). False when no extension
        compacts or nothing could be folded."""
        before = list(self.history)
        folded = self.extensions.compact(before, focus)
        if folded is None:
            return False
        self.history = folded
        status = self.context_status()
        self.bus.emit(status)
        if self.session and self.history != before:
            # The sessions list shows the figure the bar shows now, not the one from before the compaction.
            self.session.note_context_size(status.used)
        return self.history != before

    def drain(self) -> None:
        """Let each extension finish the background work that records into the session (memory
        extraction), the agent staying open for its next turn."""
        for extension in self.extensions.drainers():
            try:
                extension.drain()
            except Exception:  # as in `close`: one failing extension does not stop the others
                log.exception("draining the agent: %s failed", type(extension).__name__)

    def close(self) -> None:
        """Let each extension finish its background work (memory extraction, consolidation)."""
        for extension in self.extensions.closers():
            try:
                extension.close()
            except Exception:  # closing must finish: one failing extension does not stop the others
                log.exception("closing the agent: %s failed", type(extension).__name__)

    # -- the one context figure --------------------------------------------------------------------
    def context_tokens(self) -> int:
        # TOK-3: measure the view that will be sent (pinned state and observations included), the same
        # figure the compiler's manifest reports.
        view = self._compile(self.history)
        if view is not None:
            return self.ledger.estimate(view.messages, view.system, view.tools)
        return self.ledger.estimate(self.history, self.system_prompt, self.tools.specs())

    def context_status(self) -> ev.ContextUpdate:
        used = self.context_tokens()
        return ev.ContextUpdate(
            session_id=self.session_id,
            used=used,
            limit=self.threshold,
            window=self.window,
            percent=context_percent(used, self.threshold),
        )

    # -- one user turn -----------------------------------------------------------------------------
    def run_turn(self, prompt: str | Message) -> TurnResult:
        user = prompt if isinstance(prompt, Message) else Message.user(prompt)
        self.cancel.clear()
        self.bus.emit(ev.TurnStarted(session_id=self.session_id, prompt=user.text))
        self._append(user)
        # A turn-start hook (memory recall) may deliver one extra message later in the turn, without
        # ever blocking it: it is polled before each model call and inserted once, when ready.
        late: list[LatePoller] = self.extensions.on_turn_start(user)
        state = _TurnState()
        final_text = ""
        stop_reason = "end_turn"
        steps = 0
        try:
            while True:
                if steps >= self.limits.max_steps:
                    stop_reason = "max_steps"
                    break
                if self.cancel.is_set():
                    stop_reason = "cancelled"
                    break
                steps += 1
                late = self._deliver_late(late)
                try:
                    response = self._call_model(state)
                except _Cancelled:
                    stop_reason = "cancelled"
                    break
                assistant = response.message.with_metadata(usage=response.usage.to_dict(), model=response.model)
                # The reply says whether its reasoning is input again and whether its turn ends.
                self.ledger.record(assistant.id, response.usage, sent=state.sent, reply=assistant)
                # What the ledger has learned so far travels with the reply: a resume starts from it.
                assistant = assistant.with_metadata(**{GROWTH_METADATA: list(self.ledger.growth.samples)})
                self._append(assistant, usage=response.usage)
                self.extensions.on_usage(assistant, response.usage)
                final_text = assistant.text
                if assistant.text:
                    self.bus.emit(
                        ev.AssistantMessage(session_id=self.session_id, message_id=assistant.id, text=assistant.text)
                    )
                calls = assistant.tool_uses()
                if not calls:
                    stop_reason = response.stop_reason
                    break
                self._append(Message(role="user", parts=tuple(self._run_tools(calls, state))))
        finally:
            status = self.context_status()
            self.bus.emit(status)
            if self.session:
                # The sessions list shows the figure every screen showed at the turn's end.
                self.session.note_context_size(status.used)
                self.session.flush()
        self.bus.emit(
            ev.TurnFinished(
                session_id=self.session_id,
                stop_reason=stop_reason,
                usage=state.usage.to_dict(),
                cost_usd=state.cost or 0.0,
            )
        )
        result = TurnResult(
            text=final_text,
            stop_reason=stop_reason,
            steps=steps,
            usage=state.usage,
            cost_usd=state.cost,
            messages=list(self.history),
        )
        self.extensions.on_turn_end(result)
        return result

    def _deliver_late(self, pollers: list[LatePoller]) -> list[LatePoller]:
        """Append what each turn-start poller has ready; the ones still waiting stay for the next call."""
        waiting: list[LatePoller] = []
        for poll in pollers:
            extra = poll()
            if extra is None:
                waiting.append(poll)
            else:
                self._append(extra)
        return waiting

    # -- model calls -------------------------------------------------------------------------------
    def _compile(self, history: Sequence[Message]) -> CompiledView | None:
        if not self.extensions.has("compile_view"):
            return None
        return self.extensions.compile_view(CompileRequest(history=history, system=self.system_prompt,
                                                           tools=self.tools.specs()))

    def build_request(self, history: Sequence[Message]) -> ModelRequest:
        view = self._compile(history)
        if view is not None:
            # Send the compiled view (CTX-1); history itself is left as it is.
            # The view's messages as they are (immutable): a copy would cost a pass over the history.
            return ModelRequest(model=self.model, system=view.system, messages=view.messages, tools=list(view.tools),
                                max_output_tokens=self.limits.max_output_tokens, cache=self.cache)
        return ModelRequest(
            model=self.model,
            system=self.system_prompt,
            messages=list(history),
            tools=self.tools.specs(),
            max_output_tokens=self.limits.max_output_tokens,
            cache=self.cache,
        )

    def _view(self, reason: str = "threshold") -> list[Message]:
        if not self.extensions.has("prepare_view"):
            return list(self.history)
        self.history = self.extensions.prepare_view(
            ViewRequest(history=self.history, system=self.system_prompt, reason=reason))
        return self.history

    def _call_model(self, state: _TurnState) -> ModelResponse:
        attempt = 0
        # Every tool call so far has its result: the one point where a tool source (an MCP server's
        # tools/list_changed) may change the catalog.
        self.tools.settle()
        view = self._view()
        while True:
            try:
                request = self._well_formed(self.build_request(view))
                # The cache layer places breakpoints on the request itself (nova.context.prompt_cache).
                request = self.extensions.prepare_request(request)
                response = self._stream_once(request, attempt + 1)
            except ContextOverflow as exc:
                # CMP-9: the provider's rejection is authoritative, once per user request.
                if state.overflow_retried:
                    # CMP-9: a second rejection means the fixed part of the prompt itself is too large.
                    fixed = self.ledger.estimate([], self.system_prompt, self.tools.specs())
                    final = ContextOverflow(second_overflow_message(exc, fixed_tokens=fixed, window=self.window),
                                            tokens=exc.tokens, limit=exc.limit, provider=exc.provider,
                                            status=exc.status, code=exc.code, body=exc.body)
                    self._emit_error(final)
                    raise final from exc
                state.overflow_retried = True
                shrunk = self.extensions.on_overflow(
                    ViewRequest(history=list(self.history), system=self.system_prompt, reason="overflow")
                )
                if shrunk is None:
                    self._emit_error(exc)
                    raise
                self.history = list(shrunk)
                view = self.history
                continue
            except ProviderError as exc:
                attempt += 1
                if not exc.retryable or attempt > MAX_RETRIES:
                    self._emit_error(exc)
                    raise
                delay = min(getattr(exc, "retry_after", None) or 2.0**attempt, MAX_BACKOFF_S)
                # The surfaces say it (CLI, TUI, the web stream): a wait the user cannot see looks hung.
                retry = ev.RetryScheduled(session_id=self.session_id, attempt=attempt + 1,
                                          max_attempts=MAX_RETRIES + 1, delay_s=delay, reason=retry_reason(exc))
                log.info("%s", retry.describe())
                self.bus.emit(retry)
                # A cancel (Ctrl-C in the TUI, the API's cancel) ends the wait at once.
                if self.clock.wait(delay, self.cancel):
                    raise _Cancelled from exc
                continue
            state.usage = state.usage + response.usage
            # The meter charged the session when the call answered; the turn's own figure is priced the
            # same way (the request's cache TTL, the answering model when the price table knows it).
            price = call_cost(request, response, configured_model=self.model)
            state.cost = None if price is None or state.cost is None else state.cost + price
            self.extensions.on_call(CallRecord(request=request, response=response, cost_usd=price))
            state.sent = request.messages
            return response

    def _well_formed(self, request: ModelRequest) -> ModelRequest:
        """The last line of defence for "never a malformed request": a view in which a tool_use is not
        answered by exactly one tool_result in the next message (a provider answers that with HTTP 400)
        is repaired before it is sent, and the repair is logged and recorded. Every layer before this
        one keeps the pairing; this only fires on a bug, and then the turn goes on instead of failing."""
        problems = self._pairing.check(request.messages)
        if not problems:
            return request
        repaired, report = repair_history(request.messages)
        log.error("the view about to be sent broke tool pairing (%s); repaired: %s",
                  problems[0].detail, report.describe())
        if self.session:
            self.session.record_event("view_repaired", {"problems": [p.detail for p in problems[:10]],
                                                        "repair": report.describe()})
        return replace(request, messages=repaired)

    def _stream_once(self, request: ModelRequest, attempt: int = 1) -> ModelResponse:
        self.bus.emit(ev.ModelCallStarted(session_id=self.session_id, attempt=attempt))
        sent = self.clock.now()
        responding = False
        for event in self.provider.stream(request):
            if not responding:
                responding = True
                self.bus.emit(ev.ModelResponding(session_id=self.session_id, waited_s=self.clock.now() - sent))
            if isinstance(event, TextDelta):
                self.bus.emit(ev.TextDelta(session_id=self.session_id, text=event.text))
            elif isinstance(event, ResponseDone):
                return event.response
            if self.cancel.is_set():
                raise _Cancelled
        raise NovaError(f"the {self.provider.name} stream ended without a complete response")

    def _emit_error(self, exc: Exception) -> None:
        self.bus.emit(ev.ErrorEvent(session_id=self.session_id, error=str(exc), kind=type(exc).__name__))

    # -- tools -------------------------------------------------------------------------------------
    def _run_tools(self, calls: Sequence[ToolUsePart], state: _TurnState | None = None) -> list[Part]:
        # Calls to a tool that says it may run beside others (`concurrent`, the sub-agent `task` tool)
        # run together when there are several; everything else runs one by one, in order.
        together = [c for c in calls if getattr(self.tools.get(c.name), "concurrent", False)]
        early = self._execute_together(together) if len(together) > 1 and not self.cancel.is_set() else {}
        results: list[Part] = []
        for call in calls:
            if self.cancel.is_set() and call.id not in early:
                result = ToolResultPart(call.id, "interrupted: the user cancelled the turn", is_error=True)
            else:
                result = self._run_tool(call, early.get(call.id), state)
            result = self.extensions.process_result(call, result)
            results.append(result)
        return results

    def _execute_together(self, calls: Sequence[ToolUsePart]) -> dict[str, tuple[ToolOutput, float]]:
        """Run `calls` concurrently (asyncio, each in a worker thread); their start events are emitted
        first, their results are recorded in order by `_run_tool`."""
        for call in calls:
            self.bus.emit(ev.ToolCallStarted(session_id=self.session_id, tool_use_id=call.id, name=call.name,
                                             input=call.input))

        async def gather() -> list[tuple[ToolOutput, float]]:
            return list(await asyncio.gather(*(asyncio.to_thread(self._execute, c) for c in calls)))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            outputs = asyncio.run(gather())
        else:  # called from inside an event loop (a server handler): run ours on a thread of its own
            with ThreadPoolExecutor(max_workers=1) as pool:
                outputs = pool.submit(asyncio.run, gather()).result()
        return {call.id: done for call, done in zip(calls, outputs, strict=True)}

    def _run_tool(self, call: ToolUsePart, done: tuple[ToolOutput, float] | None = None,
                  state: _TurnState | None = None) -> ToolResultPart:
        if done is None:
            self.bus.emit(
                ev.ToolCallStarted(session_id=self.session_id, tool_use_id=call.id, name=call.name, input=call.input)
            )
            output, duration = self._execute(call)
        else:
            output, duration = done
        self.bus.emit(
            ev.ToolCallFinished(
                session_id=self.session_id,
                tool_use_id=call.id,
                name=call.name,
                output=output.content,
                is_error=output.is_error,
                duration_s=duration,
            )
        )
        if self.session and output.metadata:
            self.session.record_event("tool_metadata", {"tool_use_id": call.id, **_jsonable(output.metadata)})
        self._charge_child(output, state)
        return ToolResultPart(tool_use_id=call.id, content=output.content, is_error=output.is_error)

    def _charge_child(self, output: ToolOutput, state: _TurnState | None) -> None:
        """A sub-agent's calls are paid by the session that started it: its usage and cost (reported in
        the `task` result's metadata) are added to this turn's and this session's totals."""
        reported = output.metadata.get("subagent_usage")
        if not isinstance(reported, Mapping):
            return
        child_usage = Usage.from_dict(dict(reported))
        child_cost = output.metadata.get("subagent_cost_usd")
        if state is not None:
            state.usage = state.usage + child_usage
            if state.cost is not None:
                state.cost = None if child_cost is None else state.cost + float(child_cost)
        count = output.metadata.get("subagent_calls")
        self.meter.charge("subagent", child_usage, None if child_cost is None else float(child_cost),
                          calls=count if isinstance(count, int) and count >= 0 else 1)

    def _execute(self, call: ToolUsePart) -> tuple[ToolOutput, float]:
        """The call's output and how long the tool itself ran: the permission check (which may wait
        minutes for a person to approve) is not the tool's time, and a refused call ran for 0 s."""
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(self.tools.names()) or "none"
            return ToolOutput(content=f"Error: unknown tool {call.name!r}. Available tools: {available}.",
                              is_error=True), 0.0
        if INVALID_ARGUMENTS_KEY in call.input:
            raw = str(call.input[INVALID_ARGUMENTS_KEY])[:500]
            return ToolOutput(
                content=f"Error: the arguments for {call.name} were not a valid JSON object: {raw!r}. "
                "Call the tool again with a JSON object matching its schema.",
                is_error=True,
            ), 0.0
        try:
            # `mcp_call` names the MCP tool it runs: the policy and the run see that tool.
            tool, arguments = resolve_delegate(tool, call.input)
        except ToolError as exc:
            return ToolOutput(content=f"Error: {exc}", is_error=True), 0.0
        decision = self.policy.check(tool, arguments, cwd=self.cwd, call_id=call.id)
        if not decision.allowed:
            self.bus.emit(
                ev.PermissionDenied(
                    session_id=self.session_id, tool_use_id=call.id, name=call.name, reason=decision.reason
                )
            )
            if self.session:
                self.session.record_event(
                    "permission_denied",
                    {"tool_use_id": call.id, "tool": call.name, "reason": decision.reason, "rule": decision.rule},
                )
            return ToolOutput(content=f"{DENIED_PREFIX}{decision.reason}", is_error=True), 0.0
        ctx = ToolContext(cwd=self.cwd, session_dir=self.session_dir, timeout_s=self.limits.tool_timeout_s, cancel=self.cancel,
                          screen=self.policy.file_screen(tool.name, cwd=self.cwd), tool_use_id=call.id)
        started = self.clock.now()
        try:
            output = tool.run(arguments, ctx)
        except ToolError as exc:
            output = ToolOutput(content=f"Error: {exc}", is_error=True)
        except Exception as exc:  # a tool bug must not end the session: the model sees it and moves on
            log.exception("tool %s raised", call.name)
            output = ToolOutput(content=f"Error: {call.name} failed: {type(exc).__name__}: {exc}", is_error=True)
        return output, self.clock.now() - started

    # -- history -----------------------------------------------------------------------------------
    def _append(self, message: Message, *, usage: Usage | None = None) -> None:
        self.history.append(message)
        if self.session:
            self.session.record_message(message, usage)


def _jsonable(data: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(dict(data), default=str))
    return result


def retry_reason(exc: ProviderError) -> str:
    """`529 overloaded`: the status when there is one, then the provider's message, on one line."""
    message = " ".join((exc.message or type(exc).__name__).split())
    if len(message) > 160:
        message = message[:159] + "…"
    return f"{exc.status} {message}" if exc.status else message


def text_of(parts: Sequence[Part]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))
