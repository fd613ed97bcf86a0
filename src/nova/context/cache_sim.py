"""Simulated provider prompt caches, for replaying a recorded session with costs (`nova replay
--provider-cache`).

A request is a list of `Block`s in prefix order: the tool catalog, the system text, then one block per
message. A block carries the digest of exactly what the provider reads, its size in tokens and how many
content blocks it holds (Anthropic counts its lookback in content blocks). A prefix is identified by a
digest chained over its blocks, so equal prefixes share entries whatever objects produced them.

- `AnthropicCache`: explicit breakpoints after the tools, after the system text, after the first message
  (which compaction keeps where it is, `CacheHints.first_message`) and at the last user message before the
  observations block (CCH-1, `message_breakpoint_index`; the blocks after it, `tail`, are read uncached),
  each only when its prefix reaches the model's minimum. A lookup at a breakpoint reads
  the longest live entry at most `lookback` (20) content blocks before it; every breakpoint past the hit
  writes an entry. Entries live `ttl_s` (5 min) from their last write or read; a read refreshes the entry
  read and the shorter breakpoint entries inside it (an assumption: the API does not document it).
- `OpenAICache`: automatic: every request leaves its prefixes behind; a later request reads the longest
  live one, counted from 1,024 tokens in 128-token steps. Nothing is billed for writing.

Timestamps are the recorded call times when the recording has them; `at=None` means "no clock", and
then nothing expires.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from nova.messages import Message
from nova.model import ModelRequest, Usage
from nova.providers.formats.anthropic import message_breakpoint_index
from nova.tokens import TokenCounter

__all__ = ["AnthropicCache", "Block", "OpenAICache", "ProviderCache", "hit_rate", "make_cache", "post_compaction_usage", "prefix_keys", "request_blocks",
           "request_usage", "volatile_tail"]

ProviderName = Literal["anthropic", "openai"]


@dataclass(frozen=True, slots=True)
class Block:
    digest: bytes
    tokens: int
    content_blocks: int = 1


def prefix_keys(blocks: Sequence[Block]) -> list[bytes]:
    """The chained digest of every prefix: `keys[i]` identifies blocks[0..i]."""
    keys: list[bytes] = []
    previous = b""
    for block in blocks:
        previous = hashlib.blake2b(previous + block.digest, digest_size=16).digest()
        keys.append(previous)
    return keys


def _cumulative(blocks: Sequence[Block]) -> list[int]:
    total = 0
    out: list[int] = []
    for block in blocks:
        total += block.tokens
        out.append(total)
    return out


class ProviderCache(Protocol):
    def call(self, blocks: Sequence[Block], *, head: int, at: float | None, tail: int = 0) -> Usage:
        """Usage (uncached input, cache read, cache write) of one request; `head` is the number of leading
        blocks that form the stable head (tools, system), `tail` the number of trailing blocks after the
        message breakpoint (the observations block, `volatile_tail`)."""
        ...


class _Entries:
    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._expiry: dict[bytes, float] = {}

    def live(self, key: bytes, at: float | None) -> bool:
        expiry = self._expiry.get(key)
        return expiry is not None and (at is None or expiry >= at)

    def touch(self, key: bytes, at: float | None) -> None:
        self._expiry[key] = float("inf") if at is None else at + self.ttl_s


class _SimulatedCache:
    """The part both caches share: live entries, and a call that keys and sizes every prefix of a
    non-empty request before the provider's own rule (`_usage`) decides what was read and written."""

    def __init__(self, ttl_s: float) -> None:
        self.entries = _Entries(ttl_s)

    def call(self, blocks: Sequence[Block], *, head: int, at: float | None, tail: int = 0) -> Usage:
        if not blocks:
            return Usage()
        return self._usage(blocks, prefix_keys(blocks), _cumulative(blocks), head=head, at=at, tail=tail)

    def _usage(self, blocks: Sequence[Block], keys: Sequence[bytes], cum: Sequence[int], *, head: int,
               at: float | None, tail: int) -> Usage:
        raise NotImplementedError


class AnthropicCache(_SimulatedCache):
    def __init__(self, *, min_tokens: int = 1024, ttl_s: float = 300.0, lookback: int = 20) -> None:
        super().__init__(ttl_s)
        self.min_tokens = min_tokens
        self.lookback = lookback

    def _usage(self, blocks: Sequence[Block], keys: Sequence[bytes], cum: Sequence[int], *, head: int,
               at: float | None, tail: int) -> Usage:
        message_bp = len(blocks) - 1 - tail if len(blocks) - 1 - tail >= head else -1
        opening = head if message_bp > head else -1
        wanted = sorted({i for i in (head - 2, head - 1, opening, message_bp) if 0 <= i < len(blocks)})
        breakpoints = [i for i in wanted if cum[i] >= self.min_tokens]
        hit = -1
        for bp in breakpoints:
            hit = max(hit, self._lookup(blocks, keys, bp, at))
        read = cum[hit] if hit >= 0 else 0
        if hit >= 0:
            for i in [*(bp for bp in breakpoints if bp < hit), hit]:
                if self.entries.live(keys[i], at):
                    self.entries.touch(keys[i], at)
        last = breakpoints[-1] if breakpoints else -1
        write = cum[last] - read if last > hit else 0
        for bp in breakpoints:
            if bp > hit:
                self.entries.touch(keys[bp], at)
        return Usage(input_tokens=cum[-1] - read - write, cache_read_tokens=read, cache_write_tokens=write)

    def _lookup(self, blocks: Sequence[Block], keys: Sequence[bytes], bp: int, at: float | None) -> int:
        distance = 0
        j = bp
        while j >= 0 and distance <= self.lookback:
            if self.entries.live(keys[j], at):
                return j
            distance += blocks[j].content_blocks
            j -= 1
        return -1


class OpenAICache(_SimulatedCache):
    MIN_TOKENS = 1024
    STEP = 128

    def __init__(self, *, ttl_s: float = 300.0) -> None:
        super().__init__(ttl_s)

    def _usage(self, blocks: Sequence[Block], keys: Sequence[bytes], cum: Sequence[int], *, head: int,
               at: float | None, tail: int) -> Usage:
        common = 0
        for j in range(len(blocks) - 1, -1, -1):
            if self.entries.live(keys[j], at):
                common = cum[j]
                break
        read = (common // self.STEP) * self.STEP if common >= self.MIN_TOKENS else 0
        for key in keys:
            self.entries.touch(key, at)
        return Usage(input_tokens=cum[-1] - read, cache_read_tokens=read)


def volatile_tail(messages: Sequence[Message]) -> int:
    """How many of a request's trailing messages come after the message breakpoint (the observations
    block, which changes from call to call): the `tail` of `ProviderCache.call`."""
    sent = [m for m in messages if m.role != "system"]
    at = message_breakpoint_index(sent)
    return len(sent) - 1 - at if at >= 0 else len(sent)


def make_cache(provider: ProviderName, *, min_tokens: int = 1024, ttl_s: float = 300.0) -> ProviderCache:
    """The simulated cache of `provider`; `ttl_s` is how long an entry lives unused (a recording whose
    writes took Anthropic's 1-hour TTL is replayed with 3600)."""
    if provider == "anthropic":
        return AnthropicCache(min_tokens=min_tokens, ttl_s=ttl_s)
    if provider == "openai":
        return OpenAICache(ttl_s=ttl_s)
    raise ValueError(f"unknown provider cache {provider!r}; choose anthropic or openai")


def request_blocks(request: ModelRequest, counter: TokenCounter) -> tuple[list[Block], int]:
    """A live request as blocks (one per tool, the system text, one per message) with the digests the
    cache-break diagnosis gives its segments, and how many lead blocks form the head: what a simulated
    provider cache reads of the requests an agent really sends (tests, `benchmarks/catalog.py`)."""
    from nova.context.cache_diagnosis import request_segments
    from nova.tokens import count_message, count_system, count_tools

    segments = request_segments(request)
    tools = list(request.tools)
    sizes = [count_tools([t], counter) for t in tools]
    system_text = request.system
    head = len(tools)
    messages = [m for m in request.messages if m.role != "system"]
    blocks: list[Block] = []
    for segment in segments:
        if segment.kind == "tool":
            tokens = sizes[len(blocks)]
        elif segment.kind in ("system", "rules"):
            # The whole system text is counted once, on its first segment (contract, else rules).
            tokens = count_system(system_text, counter) if head == len(tools) else 0
            head += 1
        else:
            tokens = count_message(messages[len(blocks) - head], counter)
        blocks.append(Block(bytes.fromhex(segment.digest), tokens))
    return blocks, head


def request_usage(cache: ProviderCache, request: ModelRequest, counter: TokenCounter, *,
                  at: float | None = None) -> Usage:
    """What `cache` reports for a live request: its blocks (`request_blocks`), the message breakpoint
    before the observations block (`volatile_tail`)."""
    blocks, head = request_blocks(request, counter)
    return cache.call(blocks, head=head, at=at, tail=volatile_tail(request.messages))


def post_compaction_usage(calls: Sequence[tuple[bool, Usage]]) -> Usage:
    """The usage of calls 2..N after each compaction, summed: `calls` is every call in order, each with
    whether it is the first to send a compacted view (that one rewrites the cache; the ones after it
    should read it). Calls before the first compaction are left out."""
    total = Usage()
    seen = False
    for first_after, usage in calls:
        if first_after:
            seen = True
        elif seen:
            total = total + usage
    return total


def hit_rate(usage: Usage) -> float | None:
    """cache read / (uncached + cache read + cache write); None when nothing was sent."""
    seen = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return usage.cache_read_tokens / seen if seen else None
