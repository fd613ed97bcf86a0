"""The context compiler (CTX-1, CTX-2, CTX-4): every model call's input, compiled from its sources under a
token budget, with a manifest that says where each token came from.

Layout (CCH-3), in the order the provider reads it:

    system   [stable head: system contract, org policy, project rules]          always-on
    tools    [tool catalog, sorted by name]                                       index
    messages [append-only history up to the current request]                      on-demand
             [current request]                                                    always-on
             [the tool loop answering the request]
             [latest observations: pinned task state, policy resolutions,        pinned / always-on
              environment snapshot — one message, re-rendered every call]

Only the observations block changes from call to call (the task state after every edit or test run),
so it comes last, after everything that does not (CCH-3 draws it before the request: there, or anywhere
inside history, each change would re-send everything after it uncached). The message cache breakpoint
goes on the last message before it (`nova.providers.formats.anthropic.message_breakpoint_index`), so
each call reads everything the previous call sent but the observations; after a compaction too, from
the second call on. The head and history stay byte-stable between compactions.
Recalled memories are already messages in history (the memory runtime inserts them); the compiler checks
them against higher-ranked rules (CTX-3) and leaves out any memory that conflicts, saying so.

Determinism: the output depends only on the inputs. Synthetic messages get ids derived from their text
and no timestamps, so the same inputs give byte-identical views (`ContextView.to_bytes`).

Cost: `ContextCompiler` keeps, per message id, the message's token estimate and digest (validated by
the message object itself: a rewritten message with the same id is counted again), and the segments of
the stable history, extended as history grows and cut back to where a snip or a compaction changed it.
One call then costs a pointer comparison of the history prefix (`nova.history.incremental.follow`) plus work
proportional to the current turn. The manifest, whose history segments grow in number with history,
is built when it is first read (`/context`, `nova context`), not on every call: a call needs the view
and its size only (benchmarks/compile.py and benchmarks/turn_overhead.py measure it).
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from nova.context.manifest import Dropped, Manifest, Segment, SegmentClass, apportion
from nova.context.policy import PolicyResolution, PolicySource, resolve
from nova.context.skill_block import skill_blocks, users_words
from nova.history.incremental import BLOCK_SIZE, GenerationalMemo, MessageBlocks, MessageMemo, follow
from nova.messages import Message, MessageOrigin, SummaryPart, TextPart, ToolResultPart, ToolUsePart, to_dict
from nova.model import ToolSpec
from nova.tokens import TokenCounter, TokenLedger, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter, Overheads
from nova.tokens.memo import message_sizer

__all__ = [
    "CHUNK_MESSAGES",
    "CompileInput",
    "Compiled",
    "ContextCompiler",
    "ContextView",
    "ObservationPlace",
    "SourceText",
    "chunk_size_at",
    "compile",
    "current_request_index",
    "cut_records",
    "message_text",
]

# A history segment closes at the next user request once it holds this many messages: few enough
# segments to read in a table, fine enough to say which part of history holds a text. Deep in a long
# history the segments get coarser (by position, so the split depends on the history alone): a 10,000
# message session has about 90 history segments, not 300.
CHUNK_MESSAGES = 32
CHUNK_TIERS = ((1024, 32), (8192, 128))
CHUNK_DEEP = 512


def chunk_size_at(start: int) -> int:
    return next((size for limit, size in CHUNK_TIERS if start < limit), CHUNK_DEEP)
OBSERVATION_KIND: MessageOrigin = "context"
_MEMORY_ENTRY = re.compile(r'<memory name="(?P<name>[^"]*)"[^>]*>.*?</memory>\n?', re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class SourceText:
    """One piece of text from a known source: a head piece or a latest observation."""

    id: str
    cls: SegmentClass
    source: str
    text: str
    reason: str
    version: str = ""
    priority: int = 0
    """Observations only: under budget pressure the lowest priority is left out first; pinned never."""


@dataclass(frozen=True, kw_only=True)
class CompileInput:
    head: Sequence[SourceText]
    """The stable system part, in order (joined with blank lines)."""
    tools: Sequence[ToolSpec]
    history: Sequence[Message]
    pinned: SourceText | None = None
    """The task-state segment (class pinned), re-rendered every call, so it survives every compaction."""
    observations: Sequence[SourceText] = ()
    """Latest dynamic observations: environment snapshot and the like."""
    policy: Sequence[PolicySource] = ()
    """Org policy and project rules, for the conflict check of memories and the request (CTX-3)."""
    limit: int
    """The token budget of the view: the compaction threshold."""
    window: int = 0
    pinned_budget: int = 2000
    ledger: TokenLedger | None = None
    """The one context figure (TOK-3): `used` is `ledger.estimate(view)`."""
    counter: TokenCounter | None = None
    """Used when no ledger is given."""


@dataclass(frozen=True, slots=True)
class ObservationPlace:
    """Where a view put its observations message: before history index `at`, right after the message
    `follows` (its id), with the text that message id `message_id` was derived from."""

    at: int
    follows: str
    message_id: str


@dataclass(frozen=True, kw_only=True)
class ContextView:
    system: str
    messages: Sequence[Message]
    """Immutable (`MessageBlocks`): consecutive views of a growing history share its full blocks, so a
    view costs what changed, not a copy of the history."""
    tools: tuple[ToolSpec, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                      for t in self.tools],
            "messages": [to_dict(m) for m in self.messages],
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogatepass")


@dataclass(frozen=True, kw_only=True)
class Compiled:
    view: ContextView
    used: int
    """The ledger's figure for the view (TOK-3); the same as `manifest.used`, known without building it."""
    build_manifest: Callable[[], Manifest] = field(repr=False, compare=False)
    observation_place: ObservationPlace | None = None
    """Where this view put its observations (None: it has none): always after the newest message."""

    @cached_property
    def manifest(self) -> Manifest:
        """Built on first read: its history segments grow in number with history, and most calls only
        send the view."""
        return self.build_manifest()

    def segment_text(self, segment: Segment) -> str:
        """The text a segment puts in front of the model (for `--why` and coverage checks)."""
        if segment.text or not segment.message_ids:
            return segment.text
        by_id = {m.id: m for m in self.view.messages}
        return "\n".join(message_text(by_id[i]) for i in segment.message_ids if i in by_id)

    def why(self, text: str) -> list[Segment]:
        """Segments holding `text` (case-insensitive), in view order."""
        needle = text.lower()
        return [s for s in self.manifest.segments if needle in self.segment_text(s).lower()]


def current_request_index(history: Sequence[Message]) -> int:
    """Index of the latest message a person wrote (len(history) when there is none)."""
    # Asked several times before every call, over a turn that may be a long tool loop: one pass over the
    # parts of each message, no generator per message.
    index = len(history)
    for m in reversed(history):
        index -= 1
        if m.role != "user" or m.origin is not None:
            continue
        for part in m.parts:
            if part.kind == "tool_result" or part.kind == "summary":
                break
        else:
            if m.text.strip():
                return index
    return len(history)


def _observation_position(history: Sequence[Message]) -> int:
    """Where the observations go, as the history index they come before: after the newest message. They
    are the one part of the view that changes from call to call (the task state after each edit or test
    run, the environment after each request), so they come after everything that does not, and the
    message cache breakpoint sits just before them (`nova.providers.formats.anthropic.
    message_breakpoint_index`): each call then reads the whole history the previous call sent from the
    cache and pays only for its new messages and the observations. Kept anywhere inside history, a
    changed text would re-send everything after it, uncached, and a compaction's summary with the
    observations after it would be the only cached prefix."""
    return len(history)


def _message_digest(message: Message) -> str:
    return _sha(json.dumps(to_dict(message), ensure_ascii=False, sort_keys=True))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# -- history segments ------------------------------------------------------------------------------
@dataclass(kw_only=True)
class _Chunk:
    kind: str
    """`turns`, `summary`, `memory` or `restore`."""
    start: int
    ids: list[str] = field(default_factory=list)
    tokens: int = 0
    digest: str = ""
    """Chained digest of the chunk's messages."""

    @property
    def end(self) -> int:
        return self.start + len(self.ids)


class _Fixed:
    """A counter that knows one answer: lets `count_system` add its overheads to a cached count."""

    def __init__(self, value: int, overheads: Overheads) -> None:
        self.value = value
        self.overheads = overheads

    def count(self, text: str) -> int:
        return self.value


def _kind_of(message: Message) -> str:
    if message.has("summary") or message.origin == "summary":
        return "summary"
    if message.origin == "memory":
        return "memory"
    if message.origin is not None:
        return "restore"
    if skills_in(message):
        return "skill"
    return "turns"


def skills_in(message: Message) -> list[tuple[str, str]]:
    """(name, version) of each skill body the message carries (a `skill` tool result, a `/skill`
    request): such a message is its own "on-demand" segment (SKL-2)."""
    found: list[tuple[str, str]] = []
    for part in message.parts:
        text = part.content if isinstance(part, ToolResultPart) else part.text if isinstance(part, TextPart) else ""
        if text:  # a match at the start only: no copy of a long tool result is made
            found.extend(skill_blocks(text))
    return found


def _is_request(message: Message) -> bool:
    return current_request_index([message]) == 0


class ContextCompiler:
    """Compiles views, reusing what it measured and hashed on earlier calls (see the module docstring).
    One instance per session; every result is the same as a fresh instance's."""

    def __init__(self) -> None:
        self._digests: MessageMemo[str] = MessageMemo(_message_digest)
        self._counter: TokenCounter | None = None
        self._sizer: Callable[[Message], int] | None = None
        self._history: list[Message] = []
        """The history of the last call (a mirror, see `nova.history.incremental.follow`)."""
        self._chunks: list[_Chunk] = []
        """Segments of `_history[:_chunked]`. Only the last one is ever extended: when the list is cut
        back, its new last chunk is replaced by a copy, so a manifest's snapshot never changes."""
        self._chunked = 0
        self._chunk_tokens = 0
        """The tokens of all `_chunks`."""
        self._blocks: list[tuple[Message, ...]] = []
        """`_history` in full blocks (as far as they were needed), shared by the views."""
        self._memory_at: list[int] = []
        """Positions of the memory messages in `_chunks`."""
        self._turn: tuple[int, int, int, tuple[int, ...]] = (0, 0, 0, ())
        """(start, length, tokens, memory positions) of the current turn as the last call measured it: a
        tool loop's turn grows by a message or two per call, so only those are measured (`_turn_totals`)."""
        self._last: tuple[tuple[Any, ...], Compiled] | None = None
        """The last call's inputs (all but the history) and result: the same call again (the compaction
        decision measures the history, then the request compiles it) is answered from it."""
        self._texts: GenerationalMemo[str, int] = GenerationalMemo(8192)
        self._tools_key: tuple[Any, ...] = ()
        self._tools_tokens = 0
        self._tools_version = ""
        self._directives: dict[tuple[str, str, str], PolicyResolution] = {}
        self._segment_cache: GenerationalMemo[tuple[int, int, str], Segment] = GenerationalMemo(16384)
        """Uncalibrated segments of history chunks, by (start, size, digest): a closed chunk is described once."""

    # -- cached measurements -----------------------------------------------------------------------
    def _use_counter(self, counter: TokenCounter) -> None:
        if counter is not self._counter:  # another counter measures differently: start over
            self._counter = counter
            self._sizer = message_sizer(counter)
            self._digests.clear()
            self._texts.clear()
            self._history, self._chunks, self._chunked, self._blocks = [], [], 0, []
            self._chunk_tokens, self._memory_at, self._last = 0, [], None
            self._turn = (0, 0, 0, ())
            self._tools_key = ()
            self._segment_cache.clear()

    def _tokens(self, message: Message) -> int:
        """A message's tokens, counted once per version (the counter's memo, shared with the ledger)."""
        assert self._sizer is not None
        return self._sizer(message)

    def _digest(self, message: Message) -> str:
        """A message's content digest, cached by id and validated by content. Asked for only where a
        version is needed (a closed segment, a manifest): a tool loop's new messages are counted on
        every call, and hashing their serialized form there would cost more than counting them."""
        return self._digests.get(message)

    def _count_text(self, text: str) -> int:
        value = self._texts.get(text)
        if value is None:
            assert self._counter is not None
            value = self._counter.count(text)
            self._texts.put(text, value)
        return value

    def _count_system(self, system: str) -> int:
        """`count_system`, with the text's count cached (the head rarely changes)."""
        assert self._counter is not None
        return count_system(system, _Fixed(self._count_text(system), self._counter.overheads)) if system else 0

    def _count_tools(self, tools: Sequence[ToolSpec]) -> int:
        key = tuple((t.name, t.description, id(t.input_schema), t.input_schema) for t in tools)
        if key != self._tools_key:
            assert self._counter is not None
            self._tools_key, self._tools_tokens = key, count_tools(tools, self._counter)
            self._tools_version = _sha(json.dumps([[t.name, t.description, dict(t.input_schema)] for t in tools],
                                                  sort_keys=True, default=str))[:12]
        return self._tools_tokens

    def _chunks_for(self, history: list[Message], req: int, shared: int) -> list[_Chunk]:
        """Segments of the stable history `history[:req]`, given that the history of the last call
        shared its first `shared` messages: extended as history grows; after a change (a snip, a
        compaction) the segments from the changed one on are dropped and built again (a segment's
        bounds depend only on the messages before it, so the result is a fresh build's)."""
        valid = min(shared, req)
        if valid < self._chunked:
            chunks = self._chunks
            while chunks and chunks[-1].end > valid:
                chunks.pop()
            if chunks:  # it may be extended again: snapshots keep the old object
                kept = chunks[-1]
                chunks[-1] = _Chunk(kind=kept.kind, start=kept.start, ids=list(kept.ids), tokens=kept.tokens,
                                    digest=kept.digest)
            self._chunked = chunks[-1].end if chunks else 0
            self._chunk_tokens = sum(c.tokens for c in chunks)
            del self._memory_at[bisect_left(self._memory_at, self._chunked):]
        chunks = self._chunks
        for index in range(self._chunked, req):
            message = history[index]
            tokens, digest = self._tokens(message), self._digest(message)
            kind = _kind_of(message)
            last = chunks[-1] if chunks else None
            if last is None or kind != "turns" or last.kind != "turns" \
                    or (len(last.ids) >= chunk_size_at(last.start) and _is_request(message)):
                last = _Chunk(kind=kind, start=last.end if last else 0)
                chunks.append(last)
            last.ids.append(message.id)
            last.tokens += tokens
            last.digest = _sha(last.digest + digest)
            self._chunk_tokens += tokens
            if kind == "memory":
                self._memory_at.append(index)
        self._chunked = max(self._chunked, req)
        return chunks

    def _turn_totals(self, history: list[Message], req: int, shared: int) -> tuple[int, tuple[int, ...]]:
        """Tokens and memory positions of the current turn `history[req:]`. What the last call measured
        of it stands while the turn starts where it did and those messages are unchanged (within the
        `shared` prefix); the rest is measured now. Summing the whole turn on every call would make a
        long tool loop quadratic."""
        start, length, tokens, memories = self._turn
        if start != req or start + length > shared:
            length, tokens, memories = 0, 0, ()
        begin = req + length
        new = history[begin:]
        tokens += sum(self._tokens(m) for m in new)
        found = tuple(begin + i for i, m in enumerate(new) if _kind_of(m) == "memory")
        if found:
            memories += found
        self._turn = (req, len(history) - req, tokens, memories)
        return tokens, memories

    def _blocks_of(self, history: list[Message], count: int) -> tuple[tuple[Message, ...], ...]:
        """The first `count` full blocks of `history` (which the mirror holds): each built once."""
        for index in range(len(self._blocks), count):
            self._blocks.append(tuple(history[index * BLOCK_SIZE : (index + 1) * BLOCK_SIZE]))
        return tuple(self._blocks[:count])

    def _resolution(self, sources: Sequence[PolicySource]) -> PolicyResolution:
        key = ("|".join(s.id for s in sources), _sha("\0".join(s.text for s in sources)), "")
        cached = self._directives.get(key)
        if cached is None:
            if len(self._directives) > 64:
                self._directives.clear()
            cached = self._directives[key] = resolve(sources)
        return cached

    # -- the compile -------------------------------------------------------------------------------
    def compile(self, inp: CompileInput) -> Compiled:
        counter = inp.ledger.counter if inp.ledger is not None else inp.counter or HeuristicCounter(CL100K_PROFILE)
        self._use_counter(counter)
        history = inp.history if isinstance(inp.history, list) else list(inp.history)
        previous = len(self._history)
        shared = follow(self._history, history)
        del self._blocks[shared // BLOCK_SIZE :]
        key = (tuple(inp.head), tuple(inp.tools), inp.pinned, tuple(inp.observations), tuple(inp.policy), inp.limit,
               inp.window, inp.pinned_budget, inp.ledger, inp.ledger.anchor if inp.ledger else None, counter)
        if self._last is not None and shared == previous == len(history) and self._last[0] == key:
            return self._last[1]
        compiled = self._compile(inp, history, shared, counter)
        self._last = (key, compiled)
        return compiled

    def _compile(self, inp: CompileInput, history: list[Message], shared: int, counter: TokenCounter) -> Compiled:
        dropped: list[Dropped] = []

        # CTX-3: higher sources first; project lines that lose to org policy are cut from the head.
        head_resolution = self._resolution(inp.policy)
        head: list[SourceText] = []
        for piece in inp.head:
            cut = head_resolution.cut_lines(piece.id)
            text = piece.text
            for conflict in head_resolution.suppressed(piece.id):
                dropped.append(Dropped(id=f"{piece.id}:line", source=piece.source,
                                       reason=f"rule line {conflict.loser.text!r} {conflict.reason()}"))
            if cut:
                text = "\n".join(line for line in text.split("\n")
                                 if line.strip().lstrip("-*•# ").strip() not in cut)
            if text.strip():
                head.append(_with_text(piece, text))
        system = "\n\n".join(p.text for p in head)
        tools = tuple(sorted(inp.tools, key=lambda t: t.name))

        req = current_request_index(history)
        current = history[req:]
        chunks = self._chunks_for(history, req, shared)

        # CTX-3 for the request and the recalled memories.
        turn_tokens, turn_memories = self._turn_totals(history, req, shared)
        memory_positions = [*self._memory_at, *turn_memories]
        request_sources = [PolicySource(level="request", id=f"message:{history[req].id}",
                                        text=users_words(history[req]))] \
            if req < len(history) else []
        memory_sources = [PolicySource(level="memory", id=f"memory:{name}", text=body)
                          for i in memory_positions for name, body in _memory_entries(history[i])]
        resolution = self._resolution([*inp.policy, *request_sources, *memory_sources]) \
            if (request_sources or memory_sources) else head_resolution
        replaced: dict[int, Message | None] = {}
        for i in memory_positions:
            message = history[i]
            losers = [(name, resolution.suppressed(f"memory:{name}")) for name, _ in _memory_entries(message)]
            suppressed = {name for name, conflicts in losers if conflicts}
            if not suppressed:
                continue
            for name, conflicts in losers:
                if conflicts:
                    dropped.append(Dropped(id=f"memory:{name}", source=f"memory:{name} in message {message.id}",
                                           reason=f"suppressed: {conflicts[0].reason()}"))
            replaced[i] = _without_memories(message, suppressed)

        # Latest observations: pinned task state (own budget), policy resolutions, environment.
        observations: list[SourceText] = []
        if inp.pinned is not None and inp.pinned.text:
            pinned = inp.pinned
            if self._count_text(pinned.text) > inp.pinned_budget:
                clipped = _clip_to(pinned.text, inp.pinned_budget, self._count_text)
                dropped.append(Dropped(id=f"{pinned.id}:tail", source=pinned.source,
                                       reason=f"pinned budget of {inp.pinned_budget} tokens",
                                       tokens=self._count_text(pinned.text) - self._count_text(clipped)))
                pinned = _with_text(pinned, clipped)
            observations.append(pinned)
        notes = resolution.notes()
        if notes:
            text = "[Policy resolution — settled by Nova before this call (CTX-3)]\n" + "\n".join(notes)
            observations.append(SourceText(id="policy.resolution", cls="always-on", source="policy precedence: "
                                           "org > project > request > memory", text=text,
                                           reason="the request conflicts with a higher-ranked rule", priority=100))
        observations.extend(o for o in inp.observations if o.text)

        # Budget (CTX-4): goals, constraints and the request are never dropped; recalled memories go
        # first (oldest first), then observations by priority. Only when that makes the view fit: a view
        # over its budget however much is left out is the controller's to shrink (it is past its soft
        # line), and leaving out a few tokens there would only move the cached prefix, call after call.
        fixed = self._count_system(system) + self._count_tools(tools)
        history_tokens = self._chunk_tokens + turn_tokens
        obs_tokens = self._observation_tokens(observations)
        over = fixed + history_tokens + obs_tokens - inp.limit
        if 0 < over <= self._droppable(history, memory_positions, replaced, observations):
            for i in memory_positions:
                if over <= 0:
                    break
                if replaced.get(i, history[i]) is None:
                    continue
                size = self._tokens(history[i])
                replaced[i] = None
                over -= size
                dropped.append(Dropped(id=f"message:{history[i].id}", source=_memory_source(history[i]),
                                       reason="recalled memory left out: the view was over its token budget",
                                       tokens=size))
            for piece in sorted((o for o in observations if o.cls != "pinned"), key=lambda o: o.priority):
                if over <= 0:
                    break
                observations.remove(piece)
                size = self._count_text(piece.text)
                over -= size
                dropped.append(Dropped(id=piece.id, source=piece.source, tokens=size,
                                       reason="observation left out: the view was over its token budget"))

        obs_message = _observation_message(observations)
        # The observations go last: they are what changes from call to call.
        # The view repeats history up to the first place it departs from it (the observations, a left
        # out or trimmed memory): that part is shared blocks, only the rest is built for this call.
        obs_at = _observation_position(history)
        departs = min([obs_at if obs_message is not None else len(history), *replaced])
        blocks = self._blocks_of(history, departs // BLOCK_SIZE)
        base = len(blocks) * BLOCK_SIZE
        messages = history[base:]
        if obs_message is not None:
            messages.insert(obs_at - base, obs_message)
        offset = 1 if obs_message is not None else 0
        for i, new in sorted(replaced.items(), reverse=True):
            at = (i if i < obs_at else i + offset) - base
            if new is None:
                del messages[at]
            else:
                messages[at] = new
        view = ContextView(system=system, messages=MessageBlocks(blocks, tuple(messages)), tools=tools)

        # The one figure (TOK-3), and segments calibrated to it.
        if inp.ledger is not None:
            used = inp.ledger.estimate(view.messages, view.system, list(view.tools))
        else:
            used = self._count_system(system) + self._count_tools(tools) + sum(
                self._tokens(m) for m in view.messages)
        # What the manifest needs, fixed now, in constant time: the closed chunks never change (see
        # `_chunks`), the last one is kept with its size at this call (its first ids never change), and
        # the history list is the caller's, so the stable messages are read back from the view.
        closed = chunks[:-1]
        last = (chunks[-1], len(chunks[-1].ids), chunks[-1].tokens, chunks[-1].digest) if chunks else None
        originals = _Originals(view.messages, sorted(i for i, m in replaced.items() if m is None and i < req),
                               inserted=obs_at if obs_message is not None and obs_at <= req else None)
        tools_version = self._tools_version

        def build_manifest() -> Manifest:
            describer = self if self._counter is counter else _describer(counter, tools_version)
            snapshot = list(closed)
            if last is not None:
                chunk, size, tokens, digest = last
                snapshot.append(_Chunk(kind=chunk.kind, start=chunk.start, ids=chunk.ids[:size], tokens=tokens,
                                       digest=digest))
            segments = describer._segments(
                head=head, system=system, tools=tools, chunks=snapshot, stable=originals, current=current, req=req,
                observations=observations, obs_message=obs_message, replaced=replaced, tools_version=tools_version)
            calibrated = apportion(used, [s.estimated for s in segments])
            segments = [_with_tokens(s, t) for s, t in zip(segments, calibrated, strict=True)]
            digest = _sha("\0".join([_sha(system), _sha(json.dumps([t.name for t in tools])),
                                     *(s.version for s in segments)]))
            return Manifest(used=used, limit=inp.limit, window=inp.window or inp.limit, segments=tuple(segments),
                            dropped=(*dropped, *cut_records(view.messages)), digest=digest)

        place = None if obs_message is None else ObservationPlace(
            at=obs_at, follows=history[obs_at - 1].id if obs_at > 0 else "", message_id=obs_message.id)
        return Compiled(view=view, used=used, build_manifest=build_manifest, observation_place=place)

    def _droppable(self, history: Sequence[Message], memory_positions: Sequence[int],
                   replaced: dict[int, Message | None], observations: Sequence[SourceText]) -> int:
        """The most the budget may leave out: the recalled memories still in view and the observations
        other than the pinned state."""
        memories = sum(self._tokens(history[i]) for i in memory_positions
                       if replaced.get(i, history[i]) is not None)
        return memories + sum(self._count_text(o.text) for o in observations if o.cls != "pinned")

    def _observation_tokens(self, observations: Sequence[SourceText]) -> int:
        message = _observation_message(observations)
        return self._tokens(message) if message is not None else 0

    def _segments(self, *, head: Sequence[SourceText], system: str, tools: Sequence[ToolSpec],
                  chunks: Sequence[_Chunk], stable: _Originals, current: Sequence[Message], req: int,
                  observations: Sequence[SourceText], obs_message: Message | None,
                  replaced: dict[int, Message | None], tools_version: str) -> list[Segment]:
        assert self._counter is not None
        segments: list[Segment] = []
        # The head: the system block's count split over its pieces.
        head_weights = [self._count_text(p.text) for p in head]
        head_tokens = apportion(self._count_system(system), head_weights) if head else []
        for piece, tokens in zip(head, head_tokens, strict=True):
            segments.append(Segment(id=piece.id, cls=piece.cls, source=piece.source,
                                    version=piece.version or _sha(piece.text)[:12], tokens=tokens, estimated=tokens,
                                    reason=piece.reason, visibility="system", text=piece.text))
        if tools:
            names = ", ".join(t.name for t in tools)
            tokens = self._count_tools(tools)
            segments.append(Segment(id="tools", cls="index", source=f"tool registry: {names}",
                                    version=tools_version,
                                    tokens=tokens, estimated=tokens, visibility="tools", text=names,
                                    reason=f"tool catalog ({len(tools)} tools, sorted by name for a stable prefix)"))
        for chunk in chunks:
            segments.append(self._chunk_segment(chunk, stable, replaced))
        loaded: list[Message] = []
        shown: list[Message] = []
        if current:
            kept = [(req + i, m) for i, m in enumerate(current) if replaced.get(req + i, m) is not None]
            every = [replaced.get(i) or m for i, m in kept]
            # A skill body loaded in this turn is its own on-demand segment, after the turn's segment.
            loaded = [m for m in every if skills_in(m)]
            shown = [m for m in every if not skills_in(m)]
        if current and shown:
            tokens = sum(self._tokens(m) for m in shown)
            first = current[0]
            memories = [m for m in shown if _kind_of(m) == "memory"]
            reason = "the current request and the tool loop answering it"
            if memories:
                reason += f"; with recalled memories ({_memory_source(memories[0])}) as reference material"
            segments.append(Segment(
                id="request", cls="always-on", source=_ids_source([m.id for m in shown]),
                version=_sha("".join(self._digest(m) for m in shown))[:12], tokens=tokens, estimated=tokens,
                reason=reason if _is_request(first) else "the latest messages", visibility="messages",
                message_ids=tuple(m.id for m in shown)))
        used_ids: set[str] = set()
        for message in loaded:
            tokens = self._tokens(message)
            loaded_skills = skills_in(message)
            segment_id = f"skill:{loaded_skills[0][0]}"
            while segment_id in used_ids:
                segment_id += "+"
            used_ids.add(segment_id)
            segments.append(Segment(
                id=segment_id, cls="on-demand", source=_skills_source(loaded_skills, message.id),
                version=self._digest(message)[:12], tokens=tokens, estimated=tokens,
                reason="skill body loaded on demand for the current request (the skill tool or /skill)",
                visibility="messages", message_ids=(message.id,)))
        if obs_message is not None:
            total = self._tokens(obs_message)
            shares = apportion(total, [self._count_text(o.text) for o in observations])
            for piece, tokens in zip(observations, shares, strict=True):
                segments.append(Segment(id=piece.id, cls=piece.cls, source=piece.source,
                                        version=piece.version or _sha(piece.text)[:12], tokens=tokens,
                                        estimated=tokens, reason=piece.reason, visibility="messages",
                                        text=piece.text, message_ids=(obs_message.id,)))
        return segments

    def _chunk_segment(self, chunk: _Chunk, stable: _Originals, replaced: dict[int, Message | None]) -> Segment:
        """Plain history chunks are described from what the chunk cached (no per-message work per
        call); the others read their messages (`stable`, by position, or `replaced`)."""
        touched = bool(replaced) and any(chunk.start <= i < chunk.end for i in replaced)
        key = (chunk.start, len(chunk.ids), chunk.digest)
        cached = self._segment_cache.get(key)
        if cached is not None and not touched:
            return cached
        ids: tuple[str, ...] = tuple(chunk.ids)
        tokens, version = chunk.tokens, chunk.digest[:12]
        messages: Sequence[Message] = ()
        if chunk.kind != "turns" or touched:
            shown = [replaced.get(i, stable[i]) for i in range(chunk.start, chunk.end)]
            messages = [m for m in shown if m is not None]
            tokens = sum(self._tokens(m) for m in messages)
            version = _sha("".join(self._digest(m) for m in messages))[:12]
            ids = tuple(m.id for m in messages)
        if chunk.kind == "summary":
            covers = sum(len(p.covers) for m in messages for p in m.parts if isinstance(p, SummaryPart))
            cls: SegmentClass = "on-demand"
            reason = f"compaction summary standing in for {covers} earlier messages (raw log keeps them)"
            sized = next((m.metadata.get("compaction") for m in messages if m.metadata.get("compaction")), None)
            if isinstance(sized, dict) and sized.get("source"):
                # An imported session's: the recorded agent wrote and sized it, and recorded none of Nova's figures.
                reason += f"; written by the recorded agent ({sized['source']}) when it compacted"
            elif isinstance(sized, dict):
                reason += (f"; the view after it was {sized.get('view', 0):,} tokens, sized to "
                           f"{sized.get('bound', 'half the threshold')} ({sized.get('target', 0):,} tokens is half")
                reason += (f"; the continuity floor, {sized['floor']:,} tokens, is the fixed prompt, the user's words, "
                           "the modified files, the last failing command and the kept tail cut to the least)"
                           if "floor" in sized else ")")
        elif chunk.kind == "memory":
            cls, reason = "on-demand", "recalled memories, injected as reference material for an earlier request"
        elif chunk.kind == "skill":
            cls, reason = "on-demand", "skill body loaded on demand for an earlier request (the skill tool or /skill)"
        elif chunk.kind == "restore":
            cls, reason = "on-demand", "restore attachment re-supplied after a compaction (CMP-7)"
        else:
            cls, reason = "on-demand", "conversation history (append-only, before the current request)"
        source = _memory_source(messages[0]) if chunk.kind == "memory" and messages else _ids_source(ids)
        if chunk.kind == "skill" and messages:
            source = _skills_source([s for m in messages for s in skills_in(m)], ids[0])
        segment = Segment(id=f"history.{chunk.start:05d}", cls=cls, source=source, version=version, tokens=tokens,
                          estimated=tokens, reason=reason, visibility="messages", message_ids=ids)
        if not touched:
            self._segment_cache.put(key, segment)
        return segment


class _Originals:
    """The history messages before the request, read back from a view: the view holds them in order,
    with the left-out ones (`deleted`, sorted) missing and the replaced ones changed (a caller looks
    those up in `replaced` first)."""

    def __init__(self, view: Sequence[Message], deleted: list[int], *, inserted: int | None = None) -> None:
        """`inserted`: the history position the observations were put before, when that is among them
        (no request in view)."""
        self.view, self.deleted, self.inserted = view, deleted, inserted

    def __getitem__(self, index: int) -> Message:
        shift = 1 if self.inserted is not None and index >= self.inserted else 0
        return self.view[min(index - bisect_left(self.deleted, index) + shift, len(self.view) - 1)]


def _describer(counter: TokenCounter, tools_version: str) -> ContextCompiler:
    """A compiler that measures with `counter`: builds a manifest after its own compiler moved on to
    another counter."""
    describer = ContextCompiler()
    describer._use_counter(counter)
    describer._tools_version = tools_version
    return describer


def compile(inp: CompileInput) -> Compiled:
    """Compile one view with a fresh compiler (same result as a long-lived `ContextCompiler`)."""
    return ContextCompiler().compile(inp)


# -- helpers -----------------------------------------------------------------------------------------
def _with_text(piece: SourceText, text: str) -> SourceText:
    return SourceText(id=piece.id, cls=piece.cls, source=piece.source, text=text, reason=piece.reason,
                      version=piece.version, priority=piece.priority)


def _with_tokens(segment: Segment, tokens: int) -> Segment:
    return Segment(id=segment.id, cls=segment.cls, source=segment.source, version=segment.version, tokens=tokens,
                   reason=segment.reason, visibility=segment.visibility, estimated=segment.estimated,
                   message_ids=segment.message_ids, text=segment.text)


def _observation_message(observations: Sequence[SourceText]) -> Message | None:
    if not observations:
        return None
    text = "\n\n".join(o.text for o in observations)
    # Id from the text, no timestamp: identical inputs give identical bytes.
    return Message(role="user", parts=(TextPart(text),), id=f"ctx_{_sha(text)[:20]}", created_at=0.0,
                   origin=OBSERVATION_KIND)


def cut_records(messages: Sequence[Message]) -> list[Dropped]:
    """What the view shows cut, for the manifest: the messages cut to fit (nova.context.oversize), and
    the user messages a compaction summary could not carry whole; each with what was left out, why, and
    where the whole text is."""
    out: list[Dropped] = []
    for m in messages:
        cut = m.metadata.get("cut")
        if isinstance(cut, dict):
            tokens, kept = int(cut.get("tokens", 0)), int(cut.get("kept", 0))
            out.append(Dropped(id=f"cut:{m.id}", source=f"message:{m.id}", tokens=max(0, tokens - kept),
                               reason=f"the middle of this {m.role} message was cut ({tokens:,} → {kept:,} tokens): "
                                      f"{cut.get('reason', '')}. {cut.get('where', '')}"))
        sized = m.metadata.get("compaction") if m.origin == "summary" else None
        for left in sized.get("users_cut", ()) if isinstance(sized, dict) else ():
            tokens, kept = int(left.get("tokens", 0)), int(left.get("kept", 0))
            for mid in left.get("ids", ()):
                out.append(Dropped(
                    id=f"cut:{mid}", source=f"message:{mid}", tokens=max(0, tokens - kept),
                    reason=(f"the user's message is not in the compaction summary whole ({tokens:,} → {kept:,} "
                            f"tokens): {left.get('reason', '')}. The whole text is message {mid} of the session "
                            "transcript")))
    return out


def _memory_entries(message: Message) -> list[tuple[str, str]]:
    return [(m.group("name"), m.group(0)) for m in _MEMORY_ENTRY.finditer(message.text)]


def _without_memories(message: Message, names: set[str]) -> Message | None:
    def keep(match: re.Match[str]) -> str:
        return "" if match.group("name") in names else match.group(0)

    text = _MEMORY_ENTRY.sub(keep, message.text)
    if not _MEMORY_ENTRY.search(text):
        return None
    return message.with_parts([TextPart(text)]).with_metadata(suppressed_memories=sorted(names))


def _memory_source(message: Message) -> str:
    names = message.metadata.get("memories") or [n for n, _ in _memory_entries(message)]
    return "memory:" + ",".join(str(n) for n in names) if names else f"message:{message.id}"


def _skills_source(names: Sequence[tuple[str, str]], message_id: str) -> str:
    return "skill:" + ",".join(f"{n}@{v}" for n, v in names) + f" (message:{message_id})"


def _ids_source(ids: Sequence[str]) -> str:
    if not ids:
        return "messages: none"
    if len(ids) == 1:
        return f"message:{ids[0]}"
    return f"messages:{ids[0]}..{ids[-1]} ({len(ids)})"


def message_text(message: Message) -> str:
    """The readable text of a message: text, summaries, tool results, tool calls as `name {json}`."""
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart | SummaryPart) and part.text:
            lines.append(part.text)
        elif isinstance(part, ToolResultPart) and part.content:
            lines.append(part.content)
        elif isinstance(part, ToolUsePart):
            lines.append(f"{part.name} {json.dumps(dict(part.input), default=str)}")
    return "\n".join(lines)


def _clip_to(text: str, budget: int, count: Any) -> str:
    """Keep whole lines from the top while they fit (the header, goal and constraints come first)."""
    kept: list[str] = []
    for line in text.split("\n"):
        candidate = "\n".join([*kept, line])
        if count(candidate) > budget and kept:
            break
        kept.append(line)
    return "\n".join(kept) + "\n[… more task state: `nova context --why` or /context shows it]"
