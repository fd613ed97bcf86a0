"""Is there a secret in this text? The one check every piece of memory text passes (SPEC MEM-7).

Three layers, each catching what the one before misses:

1. Nova's own patterns for the formats it knows best (Anthropic, OpenAI, AWS, GitHub, private key
   blocks, passwords in URLs and `password=` assignments, and secrets said in a sentence: "my password
   is hunter2"), with placeholders (`${TOKEN}`, `<your key>`, `****`) not counted;
2. detect-secrets' plugins (a maintained detector: many more providers and formats), run on each line
   with no verification request ever sent;
3. bare high-entropy tokens: a 40-character AWS secret key pasted on its own has no prefix and no
   label for the first two layers to see.

Before scanning, the text is normalized: zero-width characters (U+200B..U+200D, U+2060, U+FEFF) that
would split a key so no pattern matches are removed, and runs that look like base64 or hex are decoded
and the decoded text scanned too (a base64-encoded private key is a private key).

A finding names the kind of secret and where it is in the text given; nothing here ever quotes the
secret itself, so a refusal message built from findings is safe to print and log.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SecretFinding", "describe_findings", "find_secrets", "redact"]

# Characters that render as nothing: inserted inside a key they break every pattern match.
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")

# Values that only stand in for a secret ("password=<your password>", "${TOKEN}") are not secrets.
_PLACEHOLDER = re.compile(r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|X+|\.{3}|changeme|redacted)$",
                          re.IGNORECASE)

# (kind, pattern, group holding the value that must not be a placeholder or 0 for the whole match)
_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"), 0),
    ("OpenAI API key", re.compile(r"\bsk-[A-Za-z0-9]{32,}\b"), 0),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"), 0),
    ("AWS secret access key",
     re.compile(r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})"), 1),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), 0),
    ("GitHub fine-grained token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), 0),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("Slack webhook", re.compile(r"hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+"), 0),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"), 0),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), 0),
    ("password in URL", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@[^\s/]+"), 1),
    ("password assignment",
     re.compile(r"(?i)(?<![a-z])(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|"
                r"auth[_-]?token|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{6,})"), 1),
)

# Secrets said in a sentence ("my password is hunter2", "the PIN for the safe is 4711"): no `=` or `:`
# for the assignment pattern to see. The value follows a credential word and "is"/"was"; it counts
# when it looks made up (a digit or a symbol in it), or when someone calls it theirs ("my password is
# swordfish") and it is not one of the words that describe a password instead ("… is stored in the
# vault", "… was rotated").
_PROSE_SECRET = re.compile(
    r"(?i)\b(?P<owner>my|our|his|her|their|your)?\s*(?:(?:db|database|root|admin|wifi|wi-fi|login|account)\s+)?"
    r"(?P<word>password|passwd|passphrase|passcode|pass code|pin(?: code)?|pwd|api[ _-]?key|access token|token|secret)"
    r"(?:\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[\w.@-]{1,40}(?:\s+[\w.@-]{1,40})?)?"
    r"\s+(?:is|was|are|reads|=)\s+[\"'`]?(?P<value>[^\s\"'`,;]{4,}?)[\"'`]?(?=[\s,;.!?)]*(?:\s|$))")
_NOT_A_VALUE = frozenset((
    "stored", "saved", "kept", "set", "in", "on", "at", "the", "a", "an", "not", "too", "very", "being",
    "now", "still", "also", "changed", "reset", "expired", "required", "wrong", "incorrect", "correct",
    "long", "short", "weak", "strong", "secret", "same", "different", "managed", "rotated", "encrypted",
    "hashed", "empty", "blank", "missing", "hidden", "private", "public", "known", "unknown", "needed",
    "given", "sent", "shared", "written", "generated", "available", "invalid", "valid", "lost",
    "forgotten", "there", "here", "used", "protected", "defined", "configured", "listed", "provided",
    "optional", "mandatory", "case-sensitive", "sensitive", "displayed", "shown", "printed", "masked",
    "redacted",
))


def _prose_findings(text: str) -> Iterator[SecretFinding]:
    for match in _PROSE_SECRET.finditer(text):
        value = match.group("value").rstrip(".!?)")
        if len(value) < 4 or _PLACEHOLDER.match(value) or value.lower() in _NOT_A_VALUE:
            continue
        made_up = any(not ch.isalpha() for ch in value)
        word = match.group("word").lower()
        if made_up or (match.group("owner") and word not in ("token", "secret")):
            yield SecretFinding("secret in prose", match.start("value"), match.start("value") + len(value))


# Runs worth decoding: base64 (standard or URL-safe, possibly wrapped over lines as PEM bodies are)
# and hex. Short runs decode to nothing a secret could hide in.
_BASE64_RUN = re.compile(r"(?:[A-Za-z0-9+/_-]{16,}={0,2})(?:\s*\n\s*[A-Za-z0-9+/_-]{4,}={0,2})*")
_HEX_RUN = re.compile(r"\b(?:[0-9a-fA-F]{2}){12,}\b")
_DECODE_DEPTH = 2

# A bare token: a run of key characters long enough to be a credential.
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
_HEX_ONLY = re.compile(r"^[0-9a-fA-F]+$")
_BARE_MIN_ENTROPY = 4.0
_BARE_MIN_SWITCHES = 0.3


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str
    start: int
    end: int

    def describe(self) -> str:
        return self.kind


def describe_findings(findings: Sequence[SecretFinding]) -> str:
    """The kinds found, for a refusal message ("AWS access key id, private key (base64-encoded)")."""
    return ", ".join(sorted({f.kind for f in findings}))


# -- normalization --------------------------------------------------------------------------------------
def _strip_zero_width(text: str) -> tuple[str, list[int]]:
    """`text` without zero-width characters, and for each kept character its index in `text`."""
    kept: list[str] = []
    origin: list[int] = []
    for index, ch in enumerate(text):
        if ch not in _ZERO_WIDTH:
            kept.append(ch)
            origin.append(index)
    return "".join(kept), origin


def _printable(data: bytes) -> str | None:
    """`data` as text when it is mostly printable UTF-8 (so it is worth scanning), else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    printable = sum(1 for ch in text if ch.isprintable() or ch in "\n\r\t")
    return text if printable / len(text) >= 0.9 else None


def _decoded_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) for each base64- or hex-looking run that decodes to text."""
    for match in _BASE64_RUN.finditer(text):
        run = re.sub(r"\s+", "", match.group(0))
        padded = run + "=" * (-len(run) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                data = decode(padded.encode("ascii"))
            except (binascii.Error, ValueError):
                continue
            decoded = _printable(data)
            if decoded is not None:
                yield match.start(), match.end(), decoded
                break
    for match in _HEX_RUN.finditer(text):
        decoded = _printable(bytes.fromhex(match.group(0)))
        if decoded is not None:
            yield match.start(), match.end(), decoded


# -- layer 1: Nova's patterns ------------------------------------------------------------------------
def _pattern_findings(text: str) -> Iterator[SecretFinding]:
    for kind, pattern, group in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(group)
            if group and _PLACEHOLDER.match(value.strip("\"'")):
                continue
            yield SecretFinding(kind, match.start(), match.end())


# -- layer 2: detect-secrets --------------------------------------------------------------------------
# Public IP addresses are not secrets; the keyword plugin is replaced by Nova's assignment pattern,
# which also sees unquoted values.
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector", "KeywordDetector"})
_plugins: list[Any] | None = None
_plugins_lock = threading.Lock()


def _detect_secrets_plugins() -> list[Any]:
    """One instance of each detect-secrets plugin, built on first use (importing it costs ~0.1 s)."""
    global _plugins
    with _plugins_lock:
        if _plugins is None:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

            classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
            _plugins = [cls() for cls in classes if cls.__name__ not in _SKIPPED_PLUGINS]
        return _plugins


def _ignored_value(value: str) -> bool:
    from detect_secrets.filters import heuristic

    return (bool(_PLACEHOLDER.match(value.strip("\"'"))) or heuristic.is_templated_secret(value)
            or heuristic.is_sequential_string(value) or heuristic.is_potential_uuid(value))


def _detector_findings(text: str) -> Iterator[SecretFinding]:
    """detect-secrets' plugins line by line. `analyze_string` is called rather than `analyze_line` so
    no plugin ever sends a verification request with the secret."""
    offset = 0
    for line in text.splitlines(keepends=True):
        for plugin in _detect_secrets_plugins():
            limit = getattr(plugin, "entropy_limit", None)
            for value in plugin.analyze_string(line):
                if not value or _ignored_value(value):
                    continue
                if limit is not None and plugin.calculate_shannon_entropy(value) < limit:
                    continue
                at = line.find(value)
                start = offset + max(at, 0)
                yield SecretFinding(_kind_name(plugin.secret_type), start, start + (len(value) if at >= 0 else 0))
        offset += len(line)


def _kind_name(secret_type: str) -> str:
    return secret_type[0].upper() + secret_type[1:] if secret_type else "secret"


# -- layer 3: bare high-entropy tokens ----------------------------------------------------------------
def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _class_switches(value: str) -> float:
    """How often consecutive characters change class (upper, lower, digit, other), per character.
    Random keys switch constantly; identifiers and words (`snake_case_names`, `CamelCase`) rarely."""
    def cls(ch: str) -> int:
        return 0 if ch.isupper() else 1 if ch.islower() else 2 if ch.isdigit() else 3

    switches = sum(1 for a, b in itertools.pairwise(value) if cls(a) != cls(b))
    return switches / len(value)


def _bare_findings(text: str) -> Iterator[SecretFinding]:
    for match in _TOKEN.finditer(text):
        value = match.group(0)
        # Hex alone is a commit or content hash far more often than a key in notes; labelled hex
        # keys are caught by the assignment pattern.
        if _HEX_ONLY.match(value):
            continue
        if not (any(c.isupper() for c in value) and any(c.islower() for c in value)
                and any(c.isdigit() for c in value)):
            continue
        if _entropy(value) >= _BARE_MIN_ENTROPY and _class_switches(value) >= _BARE_MIN_SWITCHES:
            yield SecretFinding("high-entropy token (likely a key)", match.start(), match.end())


# -- the scan ------------------------------------------------------------------------------------------
def _scan(text: str, depth: int) -> list[SecretFinding]:
    found: list[SecretFinding] = []

    def add(finding: SecretFinding) -> None:
        # One secret, one finding: an sk-proj- key also matches the generic rule, and detect-secrets
        # sees most of what Nova's patterns see.
        if not any(f.start <= finding.start < f.end or finding.start <= f.start < finding.end for f in found):
            found.append(finding)

    for finding in _pattern_findings(text):
        add(finding)
    for finding in _detector_findings(text):
        add(finding)
    if depth < _DECODE_DEPTH:
        for start, end, decoded in _decoded_runs(text):
            inner = _scan(decoded, depth + 1)
            if inner:
                kinds = describe_findings(inner)
                add(SecretFinding(f"{kinds} (encoded)", start, end))
    for finding in _bare_findings(text):
        add(finding)
    # Last: a value the layers above know by its shape is named by them.
    for finding in _prose_findings(text):
        add(finding)
    return found


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret found in `text`, in order, with spans in `text` as given (zero-width characters
    inside a finding are within its span)."""
    normalized, origin = _strip_zero_width(text)
    findings = _scan(normalized, 0)
    if len(origin) != len(text):
        def back(index: int) -> int:
            return origin[index] if index < len(origin) else len(text)

        findings = [SecretFinding(f.kind, back(f.start), back(f.end - 1) + 1 if f.end > f.start else back(f.start))
                    for f in findings]
    return sorted(findings, key=lambda f: f.start)


def redact(text: str, findings: Sequence[SecretFinding] | None = None) -> str:
    """`text` with every secret replaced by `[REDACTED <kind>]` (for logs and error messages)."""
    out, last = [], 0
    for f in findings if findings is not None else find_secrets(text):
        if f.start < last:
            continue
        out.append(text[last : f.start])
        out.append(f"[REDACTED {f.kind}]")
        last = f.end
    out.append(text[last:])
    return "".join(out)
