"""`/memory` and `/remember` inside the agent loop.

    /memory                     list memories (name, type, status)
    /memory show NAME           print one memory
    /memory approve NAME        make a candidate active
    /memory forget NAME         revoke it (kept as a tombstone so the model cannot re-create it)
    /remember [TYPE:] TEXT      save TEXT as a user-authored memory (TYPE defaults to `user`)

`handle_memory_slash` returns None for any other input, so the loop can try it first and fall through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nova.memory.config import MemoryConfig
from nova.memory.governance import Proposal, remember
from nova.memory.provenance import reinstate, revoke
from nova.memory.store import MEMORY_TYPES, MemoryStore, MemoryStoreError

__all__ = ["SlashResult", "handle_memory_slash", "name_from_text"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlashResult:
    text: str
    ok: bool = True


def name_from_text(text: str, *, words: int = 6) -> str:
    """A readable name from the first words of `text` (the slug rules then apply as usual)."""
    picked = re.findall(r"\w+", text.lower())[:words]
    return "-".join(picked) or "note"


def handle_memory_slash(
    text: str,
    *,
    store: MemoryStore,
    config: MemoryConfig | None = None,
    session_id: str | None = None,
    message_id: str | None = None,
) -> SlashResult | None:
    config = config or MemoryConfig()
    stripped = text.strip()
    command, _, rest = stripped.partition(" ")
    rest = rest.strip()
    try:
        if command == "/remember":
            return _remember(rest, store=store, config=config, session_id=session_id, message_id=message_id)
        if command == "/memory":
            return _memory(rest, store=store)
    except MemoryStoreError as exc:
        return SlashResult(text=str(exc), ok=False)
    return None


def _remember(rest: str, *, store: MemoryStore, config: MemoryConfig, session_id: str | None,
              message_id: str | None) -> SlashResult:
    if not rest:
        return SlashResult(text="usage: /remember [user:|feedback:|project:|reference:] TEXT", ok=False)
    memory_type = "user"
    head, sep, tail = rest.partition(":")
    if sep and head.strip().lower() in MEMORY_TYPES and tail.strip():
        memory_type, rest = head.strip().lower(), tail.strip()
    first_line = rest.splitlines()[0]
    proposal = Proposal(
        name=name_from_text(rest), description=first_line[:120], type=memory_type, body=rest,
        author="user", origin="user", session=session_id, messages=(message_id,) if message_id else (),
    )
    outcome = remember(store, proposal, config=config)
    if outcome.refused or outcome.memory is None:
        return SlashResult(text=f"Not saved: {outcome.refused}", ok=False)
    verb = "Updated" if outcome.merged else "Saved"
    notes = "".join(f"\n{note}" for note in outcome.notes)
    return SlashResult(text=f"{verb} {outcome.memory.type} memory {outcome.memory.name!r} "
                            f"({outcome.memory.path}){notes}")


def _memory(rest: str, *, store: MemoryStore) -> SlashResult:
    action, _, name = rest.partition(" ")
    name = name.strip()
    if not action or action == "list":
        memories = sorted(store.memories(), key=lambda m: (m.type, m.name))
        if not memories:
            return SlashResult(text="No memories yet. Save one with /remember TEXT.")
        lines = [f"- {m.name} ({m.type}, {m.status}): {m.description}"
                 + (f"\n  needs review: {m.review_note}" if m.status == "candidate" and m.review_note else "")
                 for m in memories]
        return SlashResult(text="\n".join(lines))
    if not name:
        return SlashResult(text=f"usage: /memory {action} NAME", ok=False)
    if action == "show":
        memory = store.get(name)
        assert memory.path is not None
        return SlashResult(text=memory.path.read_text(encoding="utf-8"))
    if action == "approve":
        memory = store.set_status(name, "active")
        reinstate(store, memory.name)
        return SlashResult(text=f"Approved {memory.name!r}: it can now be recalled.")
    if action in ("forget", "revoke"):
        # Through provenance: the next view drops it from summaries and task state that quoted it too.
        return SlashResult(text="\n".join(revoke(store, name).describe()))
    return SlashResult(text="usage: /memory [list|show NAME|approve NAME|forget NAME]", ok=False)
