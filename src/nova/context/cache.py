"""Prompt-cache breakpoints (CCH-1, CCH-2) and the deterministic prefix they cover.

A provider caches a request's prefix: Anthropic in the order tools → system → messages, up to each
`cache_control` breakpoint; OpenAI automatically, keyed by `prompt_cache_key`. The caller states which
breakpoints it wants in `ModelRequest.cache` (the app asks for the three of CCH-1, and a fourth closing the
first message: compaction keeps that message, the task statement, where it is, so the prefix through it
is read after a compaction rather than written again); `plan_cache` turns that wish into hints the
Anthropic converter can send as they are:

- at most `MAX_BREAKPOINTS` (4) markers, the API's limit;
- a 1 h breakpoint never after a 5 min one (the API rejects that order), so a 1 h message breakpoint
  behind a 5 min head is lowered to 5 min — lowering is the cheap direction (a 1 h write costs 2x);
- no marker on a prefix shorter than the model's minimum cacheable length (`ModelInfo.
  min_cacheable_tokens`): the provider would not cache it, and the marker would use up one of the four.

The markers themselves are rendered by `nova.providers.formats.anthropic` (on a shallow copy of the last
tool, never on the registry's `ToolSpec`, CCH-2); nothing here builds a second request body.

A live session plans through one `CachePlanner`, which gives the same plan while sizing only the
messages added since the previous request (the plan is made before every call, on a history that only
grows between compactions).

`prefix_bytes` is the canonical serialization of everything before the last breakpoint, with the
markers taken out: two requests that should share a cached prefix give the same bytes, which is what
the prefix-stability tests compare.
"""

from __future__ import annotations

import dataclasses
import json
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nova.history.incremental import LastSeen
from nova.messages import Message
from nova.model import CacheHints, ModelRequest, ToolSpec
from nova.providers.formats.anthropic import (
    first_message_index,
    message_breakpoint_index,
    request_to_anthropic,
)
from nova.providers.pricing import model_info
from nova.tokens import TokenCounter, count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter
from nova.tokens.memo import message_sizer

__all__ = [
    "DEFAULT_MIN_CACHEABLE_TOKENS",
    "MAX_BREAKPOINTS",
    "TTL_SECONDS",
    "Breakpoint",
    "CachePlan",
    "CachePlanner",
    "apply_cache_plan",
    "check_breakpoints",
    "join_system_text",
    "plan_cache",
    "prefix_bytes",
    "system_text",
]

Ttl = Literal["5m", "1h"]
MAX_BREAKPOINTS = 4
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
# Anthropic's smallest minimum; used for models the table does not know.
DEFAULT_MIN_CACHEABLE_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """One cache marker: which segment it closes, the size of the prefix up to it, and its lifetime."""

    segment: Literal["tools", "system", "opening", "messages"]
    prefix_tokens: int
    ttl: Ttl


@dataclass(frozen=True, slots=True)
class CachePlan:
    hints: CacheHints
    breakpoints: tuple[Breakpoint, ...]
    dropped: tuple[str, ...] = ()
    """Why a wanted breakpoint was not placed (one line each), for logs and tests."""


def check_breakpoints(breakpoints: Sequence[Breakpoint]) -> list[str]:
    """The Anthropic rules a set of breakpoints (in prefix order) must satisfy; empty when valid."""
    problems: list[str] = []
    if len(breakpoints) > MAX_BREAKPOINTS:
        problems.append(f"{len(breakpoints)} breakpoints; the API allows at most {MAX_BREAKPOINTS}")
    seen_short = False
    for bp in breakpoints:
        if bp.ttl == "5m":
            seen_short = True
        elif seen_short:
            problems.append(f"a 1h breakpoint on {bp.segment} follows a 5m one")
    return problems


def system_text(request: ModelRequest) -> str:
    """The system text as the Anthropic converter sends it (system-role messages hoisted after it)."""
    return join_system_text(request.system, [m.text for m in request.messages if m.role == "system"])


def join_system_text(system: str, hoisted: Sequence[str]) -> str:
    """`system_text` from the request's system text and the texts of its system-role messages."""
    return "\n\n".join(s for s in (system, *hoisted) if s)


def _last_user_index(messages: Sequence[Message]) -> int:
    """Where the message breakpoint goes: the last user message before the observations block, which
    changes from call to call (`message_breakpoint_index`)."""
    return message_breakpoint_index(messages)


def plan_cache(
    request: ModelRequest, *, counter: TokenCounter | None = None, min_tokens: int | None = None
) -> CachePlan:
    """Hints for `request` from the breakpoints its `cache` field asks for, under the rules above."""
    counter = counter or HeuristicCounter(CL100K_PROFILE)
    last_user = _last_user_index(request.messages)
    upto = [m for m in request.messages[: last_user + 1] if m.role != "system"]
    system = system_text(request)
    sizes = [count_message(m, counter) for m in upto]
    return _plan(request, system=system, tools_tokens=count_tools(request.tools, counter),
                 system_tokens=count_system(system, counter), last_user=last_user, messages_tokens=sum(sizes),
                 first_tokens=sizes[0] if sizes else 0, min_tokens=min_tokens)


def _plan(request: ModelRequest, *, system: str, tools_tokens: int, system_tokens: int, last_user: int,
          messages_tokens: int, first_tokens: int, min_tokens: int | None) -> CachePlan:
    """The rules above, given the sizes: tools, the system text, the messages through the last user one
    and the first message (system-role messages left out: the converter hoists them into the system
    text)."""
    wanted = request.cache
    if min_tokens is None:
        info = model_info(request.model)
        min_tokens = info.min_cacheable_tokens if info else DEFAULT_MIN_CACHEABLE_TOKENS
    head_ttl: Ttl = wanted.head_ttl or wanted.ttl
    message_ttl: Ttl = wanted.ttl
    if head_ttl == "5m" and message_ttl == "1h":
        message_ttl = "5m"
    head_tokens = tools_tokens + system_tokens
    candidates: list[tuple[Breakpoint, bool]] = []
    if wanted.last_tool and request.tools:
        candidates.append((Breakpoint("tools", tools_tokens, head_ttl), True))
    if wanted.system and system:
        candidates.append((Breakpoint("system", head_tokens, head_ttl), True))
    if wanted.first_message and last_user >= 0 and first_message_index(request.messages) < last_user:
        # Only when the message breakpoint is further on: on the first message itself it is that one.
        candidates.append((Breakpoint("opening", head_tokens + first_tokens, message_ttl), True))
    if wanted.last_user_message and last_user >= 0:
        candidates.append((Breakpoint("messages", head_tokens + messages_tokens, message_ttl), True))
    placed: list[Breakpoint] = []
    dropped: list[str] = []
    for bp, _ in candidates:
        if bp.prefix_tokens < min_tokens:
            dropped.append(f"{bp.segment}: prefix of ~{bp.prefix_tokens} tokens is under the model's minimum "
                           f"of {min_tokens}")
        else:
            placed.append(bp)
    # Keep the longest prefixes when over the limit (they save the most); never the case with three.
    while len(placed) > MAX_BREAKPOINTS:
        dropped.append(f"{placed[0].segment}: over the limit of {MAX_BREAKPOINTS} breakpoints")
        placed.pop(0)
    segments = {bp.segment for bp in placed}
    hints = dataclasses.replace(
        wanted,
        last_tool="tools" in segments,
        system="system" in segments,
        last_user_message="messages" in segments,
        first_message="opening" in segments,
        ttl=message_ttl,
        head_ttl=head_ttl if head_ttl != message_ttl else None,
    )
    return CachePlan(hints=hints, breakpoints=tuple(placed), dropped=tuple(dropped))


def apply_cache_plan(request: ModelRequest, *, counter: TokenCounter | None = None) -> ModelRequest:
    """`request` with planned hints (a new request; the caller's is not changed)."""
    return dataclasses.replace(request, cache=plan_cache(request, counter=counter).hints)


class CachePlanner:
    """`plan_cache` for the requests of one session, at a cost that follows what changed.

    The plan needs the size of the prefix through the last user message, and requests only grow
    between compactions. The planner keeps the messages of the last request with the running size at
    each position (each message counted once, `message_sizer`), and the system-role messages among them;
    a new request is compared with them (`LastSeen`) and only what follows the first difference is
    counted. Its plan is always exactly `plan_cache(request, counter=counter)`."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter: TokenCounter = counter or HeuristicCounter(CL100K_PROFILE)
        self._count = message_sizer(self.counter)
        self._messages = LastSeen()
        self._running: list[int] = [0]
        self._system_at: list[int] = []
        self._tools: tuple[ToolSpec, ...] = ()
        self._tools_tokens = 0
        self._system = ""
        self._system_tokens = 0

    def _size(self, message: Message) -> int:
        # System-role messages are hoisted into the system text; they count there, not as messages.
        return 0 if message.role == "system" else self._count(message)

    def plan(self, request: ModelRequest, *, min_tokens: int | None = None) -> CachePlan:
        messages = request.messages
        shared = self._messages.update(messages)
        del self._running[shared + 1 :]
        del self._system_at[bisect_left(self._system_at, shared):]
        total = self._running[-1]
        for index in range(shared, len(messages)):
            message = messages[index]
            if message.role == "system":
                self._system_at.append(index)
            total += self._size(message)
            self._running.append(total)
        system = join_system_text(request.system, [messages[i].text for i in self._system_at])
        if system != self._system:
            self._system, self._system_tokens = system, count_system(system, self.counter)
        tools = tuple(request.tools)
        if tools != self._tools:
            self._tools, self._tools_tokens = tools, count_tools(tools, self.counter)
        last_user = _last_user_index(messages)
        first = first_message_index(messages)
        return _plan(request, system=system, tools_tokens=self._tools_tokens, system_tokens=self._system_tokens,
                     last_user=last_user, messages_tokens=self._running[last_user + 1],
                     first_tokens=self._running[first + 1] if first >= 0 else 0, min_tokens=min_tokens)

    def apply(self, request: ModelRequest) -> ModelRequest:
        """`apply_cache_plan(request, counter=self.counter)`."""
        return dataclasses.replace(request, cache=self.plan(request).hints)


def _without_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


def prefix_bytes(request: ModelRequest) -> bytes:
    """Canonical bytes of the cacheable prefix (tools, system, messages through the message breakpoint:
    the last user message before the observations block) as the Anthropic converter renders it, without
    the markers: equal bytes mean a warm cache can be read."""
    body = _without_markers(request_to_anthropic(request))
    messages = body.get("messages", [])
    last_user = message_breakpoint_index([m for m in request.messages if m.role != "system"],
                                         has_content=lambda i: bool(messages[i]["content"]))
    prefix = {"tools": body.get("tools", []), "system": body.get("system", []), "messages": messages[: last_user + 1]}
    return json.dumps(prefix, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
