"""The agent's extension seam: optional hook methods with keyword-only typed inputs and a declared order.

An extension is an object that implements some of the hooks of `Extension` (subclass it and override
what you need). The agent is built once with its extensions (`Agent(extensions=[...])`) and calls each
hook on every extension that overrides it, in ascending `order` (ties keep the order they were given):

| hook               | when                                         | how several combine                  |
|--------------------|----------------------------------------------|--------------------------------------|
| `process_result`   | a tool result enters history                 | chained: each gets the previous one's |
| `prepare_view`     | before every model call (may shed history)   | chained                              |
| `on_overflow`      | the provider rejected the request as too big | the first that returns a history     |
| `compile_view`     | turning history into the request's view      | exactly one extension may have it    |
| `prepare_request`  | the request about to be sent                 | chained                              |
| `on_call`          | each successful model call                   | all, in order                        |
| `on_usage`         | the assistant message and its usage          | all, in order                        |
| `on_turn_start`    | a user message starts a turn                 | all; each may return a late poller   |
| `on_turn_end`      | a turn ended                                 | all, in order                        |
| `compact`          | `/compact [focus]`                           | exactly one extension may have it    |
| `drain`            | the session is handed on, the agent kept     | all, in order; one failing does not stop the others |
| `close`            | the agent closes                             | all, in order; one failing does not stop the others |

The built-in extensions and their orders: the MCP catalog (closed with the agent) 50, the provenance
guard (revoked memories leave every view) 50, the context controller (spill, compaction) 100, the
context compiler 200, skills in use 250, the prompt cache 300, memory 400 (`docs/architecture.md` lists
them with their modules). A later extension sees what an earlier one produced.

The types here are the hook inputs and outputs; they sit below both the loop and the context engine so
neither has to import the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from nova.errors import NovaError
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import ModelRequest, ModelResponse, ToolSpec, Usage

__all__ = [
    "CallRecord",
    "CompileRequest",
    "CompiledView",
    "Extension",
    "ExtensionError",
    "Extensions",
    "LatePoller",
    "TurnResult",
    "ViewRequest",
]

E = TypeVar("E", bound="Extension")

LatePoller = Callable[[], Message | None]
"""Returned by `on_turn_start`: polled before each model call of the turn; its message is added once,
when ready (memory recall delivers this way without ever blocking the turn)."""


class ExtensionError(NovaError):
    """Extensions that cannot work together (two implement a hook only one may have)."""


@dataclass(frozen=True, kw_only=True)
class ViewRequest:
    """Input of `prepare_view` and `on_overflow`: the working history and what the loop would send."""

    history: Sequence[Message]
    system: str
    reason: str = "threshold"


@dataclass(frozen=True, kw_only=True)
class CompileRequest:
    """Input of `compile_view`: what the loop would otherwise send as it is."""

    history: Sequence[Message]
    system: str
    tools: Sequence[ToolSpec]


class CompiledView(Protocol):
    """Output of `compile_view` (`nova.context.compiler.ContextView` is one)."""

    @property
    def system(self) -> str: ...

    @property
    def messages(self) -> Sequence[Message]: ...

    @property
    def tools(self) -> Sequence[ToolSpec]: ...


@dataclass(frozen=True, kw_only=True)
class CallRecord:
    """Input of `on_call`: one successful model call, the request as sent and its price."""

    request: ModelRequest
    response: ModelResponse
    cost_usd: float | None


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    text: str
    stop_reason: str
    steps: int
    usage: Usage
    cost_usd: float | None
    messages: Sequence[Message] = ()


class Extension:
    """Base class of an extension: every hook is optional; override the ones you need."""

    order: ClassVar[int] = 500
    """Where this extension runs among others that implement the same hook (lower first)."""

    def process_result(self, *, call: ToolUsePart, result: ToolResultPart) -> ToolResultPart:
        return result

    def prepare_view(self, *, request: ViewRequest) -> Sequence[Message]:
        return request.history

    def on_overflow(self, *, request: ViewRequest) -> Sequence[Message] | None:
        return None

    def compile_view(self, *, request: CompileRequest) -> CompiledView | None:
        return None

    def prepare_request(self, *, request: ModelRequest) -> ModelRequest:
        return request

    def on_call(self, *, record: CallRecord) -> None:
        return None

    def on_usage(self, *, message: Message, usage: Usage) -> None:
        return None

    def on_turn_start(self, *, user: Message) -> LatePoller | None:
        return None

    def on_turn_end(self, *, result: TurnResult) -> None:
        return None

    def compact(self, *, history: Sequence[Message], focus: str) -> Sequence[Message] | None:
        return None

    def drain(self) -> None:
        """Finish the background work that records into the session (a memory extraction's call is
        charged to it), keeping the extension usable: the session is about to be handed to another
        worker, which must find every record of it written, while this agent may run its next turn."""
        return None

    def close(self) -> None:
        return None


_HOOKS = ("process_result", "prepare_view", "on_overflow", "compile_view", "prepare_request", "on_call",
          "on_usage", "on_turn_start", "on_turn_end", "compact", "drain", "close")
_SINGLE = ("compile_view", "compact")


class Extensions:
    """An agent's extensions, ordered once, with each hook's implementers worked out at construction
    (so a call costs a loop over the extensions that care, not a lookup over all of them)."""

    def __init__(self, extensions: Iterable[Extension] = ()) -> None:
        given = list(extensions)
        self._all: tuple[Extension, ...] = tuple(sorted(given, key=lambda e: type(e).order))
        self._by_hook: dict[str, tuple[Extension, ...]] = {
            hook: tuple(e for e in self._all if _overrides(e, hook)) for hook in _HOOKS
        }
        for hook in _SINGLE:
            owners = self._by_hook[hook]
            if len(owners) > 1:
                names = ", ".join(type(e).__name__ for e in owners)
                raise ExtensionError(f"only one extension may implement {hook}; these do: {names}")

    def __iter__(self) -> Iterator[Extension]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def get(self, kind: type[E]) -> E | None:
        """The extension of this type (or a subclass), if the agent has one."""
        for extension in self._all:
            if isinstance(extension, kind):
                return extension
        return None

    def require(self, kind: type[E]) -> E:
        found = self.get(kind)
        if found is None:
            raise ExtensionError(f"this agent has no {kind.__name__} extension")
        return found

    def has(self, hook: str) -> bool:
        return bool(self._by_hook[hook])

    # -- dispatch ------------------------------------------------------------------------------------
    def process_result(self, call: ToolUsePart, result: ToolResultPart) -> ToolResultPart:
        for e in self._by_hook["process_result"]:
            result = e.process_result(call=call, result=result)
        return result

    def prepare_view(self, request: ViewRequest) -> list[Message]:
        """The history to send. A list is handed back as it is (it may be `request.history` itself, when
        nothing had to change): copying a long history before every call would cost more than the call."""
        history: Sequence[Message] = request.history
        for e in self._by_hook["prepare_view"]:
            history = e.prepare_view(request=ViewRequest(history=history, system=request.system,
                                                         reason=request.reason))
        return history if isinstance(history, list) else list(history)

    def on_overflow(self, request: ViewRequest) -> list[Message] | None:
        for e in self._by_hook["on_overflow"]:
            shrunk = e.on_overflow(request=request)
            if shrunk is not None:
                return list(shrunk)
        return None

    def compile_view(self, request: CompileRequest) -> CompiledView | None:
        owners = self._by_hook["compile_view"]
        return owners[0].compile_view(request=request) if owners else None

    def prepare_request(self, request: ModelRequest) -> ModelRequest:
        for e in self._by_hook["prepare_request"]:
            request = e.prepare_request(request=request)
        return request

    def on_call(self, record: CallRecord) -> None:
        for e in self._by_hook["on_call"]:
            e.on_call(record=record)

    def on_usage(self, message: Message, usage: Usage) -> None:
        for e in self._by_hook["on_usage"]:
            e.on_usage(message=message, usage=usage)

    def on_turn_start(self, user: Message) -> list[LatePoller]:
        pollers = (e.on_turn_start(user=user) for e in self._by_hook["on_turn_start"])
        return [p for p in pollers if p is not None]

    def on_turn_end(self, result: TurnResult) -> None:
        for e in self._by_hook["on_turn_end"]:
            e.on_turn_end(result=result)

    def compact(self, history: Sequence[Message], focus: str) -> list[Message] | None:
        owners = self._by_hook["compact"]
        if not owners:
            return None
        folded = owners[0].compact(history=history, focus=focus)
        return None if folded is None else list(folded)

    def drainers(self) -> tuple[Extension, ...]:
        return self._by_hook["drain"]

    def closers(self) -> tuple[Extension, ...]:
        return self._by_hook["close"]


def _overrides(extension: Extension, hook: str) -> bool:
    return getattr(type(extension), hook) is not getattr(Extension, hook)


def describe(extensions: Extensions) -> list[Mapping[str, Any]]:
    """What each extension implements, for `nova context --json` and debugging."""
    return [{"extension": type(e).__name__, "order": type(e).order,
             "hooks": [h for h in _HOOKS if _overrides(e, h)]} for e in extensions]
