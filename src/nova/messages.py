"""The provider-neutral message model.

A `Message` is a role plus a tuple of frozen, kind-tagged parts. Every part carries a `kind` literal so
that one pydantic `TypeAdapter` can serialize and parse the whole model (`to_dict` / `from_dict`,
`dumps` / `loads`). The adapter, and pydantic itself, load on the first (de)serialization: importing
this module stays cheap for the commands that never serialize a message. Provider shapes (Anthropic Messages, OpenAI Chat Completions and Responses) are
converted at the provider boundary in `nova.providers.formats`; nothing else in Nova sees them.

Tool results live in `user` messages, as the Anthropic API has them: that is the shape in which the
pairing invariant (every tool_use answered by exactly one tool_result in the next message) is easiest to
state and to check. The OpenAI converters split them into `tool` role messages.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, TypeAdapter
    from pydantic_core import CoreSchema

__all__ = [
    "ImagePart",
    "Message",
    "MessageOrigin",
    "Part",
    "Role",
    "SummaryPart",
    "TextPart",
    "ThinkingPart",
    "ToolResultPart",
    "ToolUsePart",
    "dumps",
    "from_dict",
    "harness_message",
    "loads",
    "new_id",
    "person_entries",
    "to_dict",
]

Role = Literal["system", "user", "assistant"]

MessageOrigin = Literal["summary", "summary_request", "context", "memory", "task"]
"""Which part of Nova put a message into the conversation when nobody in the conversation wrote it:

    summary          a compaction summary standing in for older messages (with its restore attachment)
    summary_request  the instruction asking a model for that summary (sent once, never kept)
    context          observations the context compiler adds to the view (pinned task state and the like)
    memory           memories recalled for the current turn
    task             the sub-task a parent agent handed to a forked sub-agent (nova.agent.subagents)

`Message.origin` is None for the conversation itself: what a person typed, the model answered, a tool
returned. Transcripts written before the field existed said the same in `metadata["nova_kind"]`;
`from_dict` moves it over."""


def new_id(prefix: str = "msg") -> str:
    """A sortable-enough unique id: prefix, time in ms (hex), 12 random hex digits (six random bytes
    straight from the OS: a `uuid4` object per message cost more than the rest of making one)."""
    return f"{prefix}_{int(time.time() * 1000):011x}{os.urandom(6).hex()}"


@dataclass(frozen=True, slots=True)
class TextPart:
    """Text. In a user message it is the person's own words unless `harness` says otherwise.

    `harness`: the recording agent (or its harness) put this text into the user message — a caveat, hook
    feedback, a skill body, a command's output, an interrupt marker — so it is never taken for what the
    person asked. `entry`: the id this text had as a message of its own, when it now sits in a message
    under another id (a repair merged two user messages for the wire; a prompt typed while tools ran was
    delivered beside their results); "" when it is the message's own text. Both are written only when set,
    so a plain text part serializes as it always did."""

    text: str
    kind: Literal["text"] = "text"
    harness: bool = False
    entry: str = ""


@dataclass(frozen=True, slots=True)
class ToolUsePart:
    """A call the model asked for. `input` is the parsed arguments object."""

    id: str
    name: str
    input: Mapping[str, Any]
    kind: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The answer to one `ToolUsePart`, matched by `tool_use_id`."""

    tool_use_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Model reasoning. `signature` must go back byte-identical within one tool loop; `redacted` holds
    the opaque payload of a redacted block. Never written to disk (SES-3).

    `provider` names the API whose signature this is ("anthropic", "openai-responses"), or is "" for
    reasoning that came unsigned. A signature means something only to the API that made it, so each
    request converter sends a thinking part back only when `provider` is its own."""

    thinking: str
    signature: str = ""
    redacted: bool = False
    provider: str = ""
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image, either inline base64 `data` with its `media_type` or a `url`."""

    media_type: str = ""
    data: str = ""
    url: str = ""
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class SummaryPart:
    """A compaction summary standing in for the messages listed in `covers`."""

    text: str
    covers: tuple[str, ...] = ()
    kind: Literal["summary"] = "summary"


class _DiscriminatedByKind:
    """`Annotated` marker: pydantic reads the union as discriminated by `kind`. It stands in for
    `pydantic.Field(discriminator="kind")` so that defining `Part` does not import pydantic."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic import Discriminator

        return handler.generate_schema(Annotated[source, Discriminator("kind")])


Part = Annotated[
    TextPart | ToolUsePart | ToolResultPart | ThinkingPart | ImagePart | SummaryPart,
    _DiscriminatedByKind(),
]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    id: str = field(default_factory=new_id)
    created_at: float = field(default_factory=time.time)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    origin: MessageOrigin | None = None

    # -- constructors -------------------------------------------------------------------------------
    @classmethod
    def user(cls, text: str, **kw: Any) -> Message:
        return cls(role="user", parts=(TextPart(text),), **kw)

    @classmethod
    def assistant(cls, text: str, **kw: Any) -> Message:
        return cls(role="assistant", parts=(TextPart(text),), **kw)

    @classmethod
    def system(cls, text: str, **kw: Any) -> Message:
        return cls(role="system", parts=(TextPart(text),), **kw)

    # -- views --------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The text parts (summaries included), for display and search; separate parts are separate
        paragraphs, as a provider shows them as separate blocks."""
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart | SummaryPart))

    def tool_uses(self) -> list[ToolUsePart]:
        return [p for p in self.parts if isinstance(p, ToolUsePart)]

    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    def has(self, kind: str) -> bool:
        return any(p.kind == kind for p in self.parts)

    def with_parts(self, parts: Iterable[Part]) -> Message:
        return replace(self, parts=tuple(parts))

    def with_metadata(self, **updates: Any) -> Message:
        return replace(self, metadata={**self.metadata, **updates})


_adapters: tuple[TypeAdapter[Message], TypeAdapter[list[Message]]] | None = None
_adapters_lock = threading.Lock()


def _get_adapters() -> tuple[TypeAdapter[Message], TypeAdapter[list[Message]]]:
    """The (message, message list) adapters, built once on first use; building them takes tens of
    milliseconds. Threads racing on the first call build them once, under the lock."""
    global _adapters
    adapters = _adapters
    if adapters is None:
        with _adapters_lock:
            adapters = _adapters
            if adapters is None:
                from pydantic import TypeAdapter

                adapters = _adapters = (TypeAdapter(Message), TypeAdapter(list[Message]))
    return adapters


def to_dict(message: Message) -> dict[str, Any]:
    """The one serializer: a JSON-ready dict with every part tagged by `kind`. `origin` is left out when
    it is None, so a conversation message is written exactly as before the field existed."""
    data: dict[str, Any] = _get_adapters()[0].dump_python(message, mode="json")
    if data["origin"] is None:
        del data["origin"]
    for part in data["parts"]:
        if part["kind"] == "text":
            if not part["harness"]:
                del part["harness"]
            if not part["entry"]:
                del part["entry"]
    return data


def from_dict(data: Mapping[str, Any]) -> Message:
    return _with_origin(_get_adapters()[0].validate_python(data))


def _with_origin(message: Message) -> Message:
    """A message written before `origin` existed: its `metadata["nova_kind"]` becomes the field. Only
    the four origins were ever written; anything else is left in the metadata rather than refused."""
    kind = message.metadata.get("nova_kind")
    if kind is None or message.origin is not None or kind not in get_args(MessageOrigin):
        return message
    rest = {k: v for k, v in message.metadata.items() if k != "nova_kind"}
    return replace(message, metadata=rest, origin=kind)


def dumps(messages: Iterable[Message]) -> str:
    return json.dumps([to_dict(m) for m in messages], ensure_ascii=False, sort_keys=True)


def loads(text: str) -> list[Message]:
    return [_with_origin(m) for m in _get_adapters()[1].validate_json(text)]


# Whole-message marks an importer or an older Nova wrote: every text of such a message without an `entry`
# of its own is the harness's (`is_meta`: Claude Code's inserts; `user_shell`: a command the person ran,
# with its output; `compaction`: the recorded agent's own summary).
_HARNESS_MESSAGE_KEYS = ("is_meta", "user_shell", "compaction")


def harness_message(message: Message) -> bool:
    """Whether `message` was marked as a whole as the harness's own (see `_HARNESS_MESSAGE_KEYS`)."""
    return any(message.metadata.get(key) for key in _HARNESS_MESSAGE_KEYS)


def person_entries(message: Message) -> list[tuple[str, str]]:
    """(entry id, text) of what a person typed in `message`, in order: every text part of a user message
    that is not the harness's, wherever it sits — beside tool results, merged with other messages, after
    an interrupt. Texts of one entry are joined as separate paragraphs. Nova's own inserts (`origin`) and
    a recorded summary hold none of their own; a person's text merged into one keeps its `entry`."""
    if message.role != "user":
        return []
    whole_harness: bool | None = None  # asked only of a message with text: most hold tool results alone
    grouped: dict[str, list[str]] = {}
    for part in message.parts:
        if not isinstance(part, TextPart) or part.harness or not part.text.strip():
            continue
        if whole_harness is None:
            whole_harness = message.origin is not None or harness_message(message)
        if whole_harness and not part.entry:
            continue
        grouped.setdefault(part.entry or message.id, []).append(part.text)
    return [(entry, "\n\n".join(texts)) for entry, texts in grouped.items()]


def iter_tool_pairs(messages: Iterable[Message]) -> Iterator[tuple[ToolUsePart, ToolResultPart | None]]:
    """Each tool_use with the result that answers it (or None), in order of the calls."""
    results: dict[str, ToolResultPart] = {}
    uses: list[ToolUsePart] = []
    for m in messages:
        uses.extend(m.tool_uses())
        for r in m.tool_results():
            results.setdefault(r.tool_use_id, r)
    for u in uses:
        yield u, results.get(u.id)
