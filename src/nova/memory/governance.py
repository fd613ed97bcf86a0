"""The deterministic layer between a proposed memory and the disk (SPEC MEM-7, MEM-8).

Every write — from the model's extraction, `/remember`, or `nova memory add` — goes through `remember()`:

1. secrets are never stored: the name, description and body pass `nova.memory.secrets` (known formats,
   detect-secrets, zero-width characters removed, base64 and hex decoded, bare high-entropy tokens); a
   hit refuses the write and the refusal names the kind of secret, never the secret;
2. the name must make a safe file name and the type must be known;
3. provenance, not wording, decides whether model text may become active: a proposal whose evidence
   includes a tool result, file content, the web or text the user pasted is held as `candidate` until a
   user approves it, whatever `memory.model_status` says; so is one whose own text is shaped like an
   instruction to a model ("Ignore your previous instructions…", `###(system_message)`, chat-template
   tokens), which is someone else's words whoever typed them; other model-authored memories start as
   `model_status` (`candidate` unless configured);
4. a model proposal never changes an approved memory: new text for a name the user approved becomes a
   separate candidate, `<name>-revision`, and the approved memory stays as it is and stays active;
5. the user's own words are active at once (the user writing it is the approval), except when they
   join an unreviewed memory of the same name: the result is held until the user approves it whole;
6. a memory the user revoked is not re-created by the model.

What `remember` writes is recorded in the review ledger (`nova.memory.reviews`) under its content
hash, so a later edit outside Nova is noticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import cast

from nova.memory.config import MemoryConfig
from nova.memory.record import MEMORY_TYPES, Author, Memory, MemorySource, MemoryType, Origin, Status, slugify
from nova.memory.reviews import By
from nova.memory.secrets import SecretFinding, describe_findings, find_secrets, redact
from nova.memory.store import MemoryStore, MemoryStoreError, UnsafeMemoryName

__all__ = [
    "Decision",
    "Proposal",
    "SecretFinding",
    "WriteOutcome",
    "claims_task_state",
    "find_secrets",
    "is_instruction_shaped",
    "is_rule_like",
    "is_sensitive",
    "merge",
    "redact",
    "remember",
    "review",
    "revision_name",
    "scope_of",
    "touches_safety_policy",
]

EXTERNAL_ORIGINS = frozenset({"tool", "web"})

# Imperatives that turn a note into a standing order. This only labels a memory (`rule_like`) for the
# reviewer; whether text may become active is decided by where it came from, never by its wording.
_RULE_LIKE = re.compile(
    r"(?i)\b(?:always|never|must|from now on|in (?:all|every) future|make sure|do not|don't|"
    r"ignore (?:all |any )?(?:previous|prior|above)|you should|you are required|run this|execute|"
    r"before (?:any|every|each)|whenever|curl\s+\S+\s*\|\s*(?:ba)?sh|rm\s+-rf)\b"
)


def is_rule_like(text: str) -> bool:
    return _RULE_LIKE.search(text) is not None


# Text written to steer a model rather than to say something: overrides of its instructions, role
# markers and chat-template tokens. Nobody's preference reads like this; a prompt injection does, and a
# user who pasted one has pasted someone else's words.
_INSTRUCTION_SHAPED = re.compile(
    r"(?ix)"
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|of\s+)?(?:(?:your|the|my|these|those)\s+)?"
    r"(?:(?:previous|prior|above|earlier|preceding|original|initial|system|existing)\s+)?"
    r"(?:instructions?|prompts?|directives?|guidelines?|system\s+message)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:(?:your|the|my)\s+)?(?:previous|prior|above|earlier|preceding)"
    r"\s+(?:rules?|context|messages?|commands?|conversation)\b"
    r"|\#{2,}\s*\(\s*(?:system|assistant|developer|user)(?:[\s_-]?(?:message|prompt|instructions?))?\s*\)"
    r"|\#{2,}\s*(?:system|developer)[_-](?:message|prompt)\b"
    r"|<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|>"
    r"|\[/?INST\]|<</?SYS>>"
    r"|\b(?:new|updated|real|actual|hidden|secret)\s+(?:system\s+)?(?:prompt|instructions)\s*:"
    r"|\byou\s+are\s+now\s+(?:an?\s+|the\s+|in\s+)?(?:DAN\b|unrestricted|unfiltered|jailbroken|developer\s+mode|free\s+from)"
    r"|\b(?:end|begin)\s+of\s+(?:the\s+)?(?:system\s+)?(?:prompt|instructions)\b"
)


def is_instruction_shaped(text: str) -> bool:
    """Whether `text` reads as an instruction to a model (see `_INSTRUCTION_SHAPED`)."""
    return _INSTRUCTION_SHAPED.search(text) is not None


# What only a person may change: the permission and sandbox rules, the approval flow, the policy files.
# The model may not write memories about these at all (SPEC MEM-8: safety policy is never model-writable).
_SAFETY_POLICY = re.compile(
    r"(?i)\b(?:permission(?:s| rules?| mode| policy)?|sandbox(?:ing)?|allowed[_ ]tools|deny[_ -]rules?|"
    r"protected paths?|policy\.md|org(?:anisation|anization)? policy|safety (?:policy|rules?|checks?)|"
    r"auto[- ]?approv\w*|--yes\b|--dangerously\S*|skip (?:the )?(?:confirmation|approval|permission|review)s?|"
    r"disable (?:the )?(?:sandbox|checks?|hooks?|review|guard\w*|approvals?)|bypass\w*|no-verify)"
)
# Claims that something was approved or decided: task state, recorded only by the user's own commands
# (SPEC MEM-8: task state is never recovered by semantic search, so memory must not carry it either).
_TASK_STATE_CLAIM = re.compile(
    r"(?i)\b(?:user|owner|maintainers?|team|lead|admin|i|we|you)\b[^.\n]{0,30}?\b(?:has |have |had )?"
    r"(?:approved|pre-?approved|authori[sz]ed|signed off|granted|okayed|ok'd|allowed)\b"
)


# Mentions of credentials and where they live: not a secret itself (those are refused outright), but a
# memory about moving or showing them is high-risk, so a person approves it (MEM-7 sensitivity).
_SENSITIVE = re.compile(
    r"(?i)(?:\.env\b|\.ssh\b|id_rsa|id_ed25519|\.netrc|\.npmrc|\.pypirc|credentials?|api[ _-]?keys?|"
    r"access[ _-]?tokens?|secrets?\b|passwords?|private[ _-]?keys?|kubeconfig)"
)


def is_sensitive(text: str) -> bool:
    return _SENSITIVE.search(text) is not None


def touches_safety_policy(text: str) -> bool:
    return _SAFETY_POLICY.search(text) is not None


def claims_task_state(text: str) -> bool:
    return _TASK_STATE_CLAIM.search(text) is not None


def scope_of(memory_type: str) -> str:
    """Where a memory applies: `user` memories live in the home, `project` ones in the repository, where
    everyone who clones it shares them. Organisation rules are policy files, never memories."""
    return "user" if memory_type in ("user", "feedback") else "project"


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """A memory someone wants written: the model (extraction), the user (`/remember`, CLI)."""

    name: str
    description: str
    type: str
    body: str
    author: Author = "user"
    origin: Origin = "user"
    session: str | None = None
    messages: tuple[str, ...] = ()
    reason: str = ""
    expires: datetime | None = None
    external: bool = False
    """Set by whoever knows the text came from tool output or the web (extraction does, by overlap)."""
    evidence: tuple[str, ...] = ()
    """What besides the user's and the model's own words the proposal was drawn from ("tool result",
    "file content"): anything here means a person must review it before it is used."""
    tool_calls: tuple[str, ...] = ()
    """The ids of the tool calls whose results were in the window the proposal was drawn from."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    allowed: bool
    status: Status = "candidate"
    external: bool = False
    rule_like: bool = False
    refusal: str | None = None
    notes: tuple[str, ...] = ()


def review(proposal: Proposal, *, config: MemoryConfig) -> Decision:
    """The checks, without touching the disk. Secrets are looked for first, so that no later refusal
    (an unsafe name, say) can quote a secret back in its message."""
    for label, text in (("name", proposal.name), ("description", proposal.description), ("body", proposal.body)):
        findings = find_secrets(text)
        if findings:
            return Decision(allowed=False, refusal=f"the {label} contains a secret "
                                                   f"({describe_findings(findings)}); secrets are never "
                                                   "stored in memory")
    try:
        slugify(proposal.name)
    except UnsafeMemoryName as exc:
        return Decision(allowed=False, refusal=str(exc))
    if proposal.type not in MEMORY_TYPES:
        return Decision(allowed=False, refusal=f"unknown memory type {proposal.type!r}; expected one of "
                                               f"{', '.join(MEMORY_TYPES)}")
    if not proposal.body.strip() and not proposal.description.strip():
        return Decision(allowed=False, refusal="memory is empty")
    external = proposal.external or proposal.origin in EXTERNAL_ORIGINS
    text = f"{proposal.name}\n{proposal.description}\n{proposal.body}"
    rule_like = is_rule_like(text)
    if proposal.author == "user":
        return Decision(allowed=True, status="active", external=external, rule_like=rule_like)
    if touches_safety_policy(text):
        return Decision(allowed=False, refusal="it is about safety policy (permissions, sandbox, approvals), "
                                               "which only a person changes, in the policy files; the model "
                                               "never writes it to memory")
    if claims_task_state(text):
        return Decision(allowed=False, refusal="it claims an approval or decision; task state is recorded only "
                                               "by the user's own commands, never carried in memory")
    if is_instruction_shaped(text):
        # External too: never recalled unreviewed, even where candidates are.
        return Decision(allowed=True, status="candidate", external=True, rule_like=True,
                        notes=("reads as instructions to a model (a prompt injection's shape): needs your review "
                               "whatever model_status says",))
    untrusted = [*proposal.evidence, *(["tool or web output"] if external else [])]
    if untrusted:
        sources = ", ".join(dict.fromkeys(untrusted))
        # Tagged external too: drawn from outside text, it is never shown even where candidates are.
        return Decision(allowed=True, status="candidate", external=True, rule_like=rule_like,
                        notes=(f"drawn from {sources}: needs your review whatever model_status says",))
    sensitive = is_sensitive(text)
    if rule_like or sensitive or scope_of(proposal.type) == "project":
        # High-risk (a standing order, or about credentials) or shared (it lives in the repository): a
        # person approves it whatever model_status says.
        why = ("reads as a standing order" if rule_like else "mentions credentials" if sensitive
               else "a project memory, shared with everyone in the repository")
        return Decision(allowed=True, status="candidate", external=external, rule_like=rule_like,
                        notes=(f"model-authored and {why}: needs your approval",))
    status: Status = config.model_status
    notes = ("model-authored: held as candidate until approved",) if status == "candidate" else ()
    return Decision(allowed=True, status=status, external=external, rule_like=rule_like, notes=notes)


def _merged_body(old: str, new: str) -> str:
    old_s, new_s = old.strip(), new.strip()
    if not new_s or new_s in old_s:
        return old_s
    if old_s in new_s:
        return new_s
    return f"{old_s}\n\n{new_s}"


def merge(existing: Memory, proposal: Proposal, decision: Decision, *, now: datetime) -> Memory:
    """Fold `proposal` into `existing`: bodies joined without repeats, provenance unioned, the newer
    description kept. The result is active only when the user wrote the new text into a memory that
    was already approved; anything else is held, so approving once never approves what is added later."""
    body = _merged_body(existing.body, proposal.body)
    status: Status = "active" if decision.status == "active" and existing.status == "active" else "candidate"
    messages = tuple(dict.fromkeys([*existing.source.messages, *proposal.messages]))
    return replace(
        existing,
        description=proposal.description or existing.description,
        body=body,
        status=status,
        author="user" if "user" in (existing.author, proposal.author) else "model",
        updated=now,
        expires=proposal.expires or existing.expires,
        source=replace(existing.source, messages=messages, session=proposal.session or existing.source.session,
                       tool_calls=tuple(dict.fromkeys([*existing.source.tool_calls, *proposal.tool_calls]))),
        external=existing.external or decision.external,
        evidence=tuple(dict.fromkeys([*existing.evidence, *proposal.evidence])),
        reason=proposal.reason or existing.reason,
        review_note="",
    )


def revision_name(name: str) -> str:
    """The name of the candidate that holds model text proposed for an approved memory `name`."""
    return f"{slugify(name)[:70]}-revision"


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOutcome:
    memory: Memory | None
    merged: bool = False
    refused: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.refused is None


def _find(store: MemoryStore, name: str) -> Memory | None:
    try:
        return store.find(name)
    except MemoryStoreError:
        return None  # an unreadable file of that name is overwritten by a good one


def _new_memory(proposal: Proposal, decision: Decision, *, name: str, moment: datetime, reason: str) -> Memory:
    return Memory(
        name=name,
        description=proposal.description.strip(),
        type=cast(MemoryType, proposal.type),
        body=proposal.body,
        status=decision.status,
        author=proposal.author,
        created=moment,
        updated=moment,
        expires=proposal.expires,
        source=MemorySource(session=proposal.session, messages=proposal.messages, origin=proposal.origin,
                            tool_calls=proposal.tool_calls),
        external=decision.external,
        reason=reason,
        evidence=proposal.evidence,
    )


def remember(store: MemoryStore, proposal: Proposal, *, config: MemoryConfig,
             now: datetime | None = None) -> WriteOutcome:
    """Review, then write: new, merged with a same-named memory, or (model text for an approved
    memory) a separate revision candidate. Refusals are returned, not raised: extraction goes on with
    the next block and the CLI prints the reason."""
    decision = review(proposal, config=config)
    if not decision.allowed:
        return WriteOutcome(memory=None, refused=decision.refusal)
    moment = now or store.clock()
    by: By = "user" if proposal.author == "user" else "nova"
    existing = _find(store, proposal.name)
    if existing is not None and existing.status == "revoked" and proposal.author != "user":
        return WriteOutcome(memory=None, refused=f"memory {existing.name!r} was revoked; "
                                                 "the model may not re-create it")
    if existing is not None and existing.status == "active" and proposal.author != "user":
        if _merged_body(existing.body, proposal.body) == existing.body.strip():
            return WriteOutcome(memory=existing, notes=(f"already in approved memory {existing.name!r}",))
        # Never into an approved memory: the model's text waits beside it for the user.
        target = revision_name(existing.name)
        held = replace(decision, status="candidate",
                       notes=(*decision.notes, f"proposed revision of approved memory {existing.name!r}, "
                                               "which is unchanged: review it and approve or forget it"))
        proposal = replace(proposal, name=target, type=existing.type,
                           reason=proposal.reason or f"proposed revision of {existing.name!r}")
        existing, decision = _find(store, target), held
        if existing is not None and existing.status == "revoked":
            return WriteOutcome(memory=None, refused=f"memory {target!r} was revoked; the model may not re-create it")
    if existing is not None:
        merged = merge(existing, proposal, decision, now=moment)
        notes = decision.notes
        if merged.status == "candidate" and proposal.author == "user":
            notes = (*notes, f"joined unreviewed text in {existing.name!r}: check it with `nova memory show "
                             f"{existing.name}` and approve it")
        note = "; ".join(notes) or existing.review_note
        written = store.write(merged, by=by if merged.status == "active" else "nova", note=note)
        return WriteOutcome(memory=written, merged=True, notes=notes)
    memory = _new_memory(proposal, decision, name=proposal.name.strip(), moment=moment, reason=proposal.reason)
    return WriteOutcome(memory=store.write(memory, by=by, note="; ".join(decision.notes)), notes=decision.notes)
