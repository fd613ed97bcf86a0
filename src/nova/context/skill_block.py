"""How a loaded skill body appears in the conversation, and how the context compiler recognises it.

A body enters history either as the `skill` tool's result or inside the user's `/skill NAME` request,
always wrapped the same way, so the compiler can give it its own "on-demand" segment in the manifest:

    <skill name="pdf-forms" version="1.2.0" dir="/repo/.nova/skills/pdf-forms">
    ...the SKILL.md body...
    </skill>
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from nova.messages import Message, TextPart

__all__ = ["SKILL_BLOCK", "skill_blocks", "users_words", "wrap_body"]

SKILL_BLOCK = re.compile(r'\s*<skill name="(?P<name>[^"]*)" version="(?P<version>[^"]*)"[^>]*>')
"""Matched at the start of a text (leading blank space allowed), never searched for inside it."""


def wrap_body(*, name: str, version: str, folder: str, body: str) -> str:
    return (f'<skill name="{name}" version="{version}" dir="{folder}">\n'
            f"Base directory of this skill (its scripts and files): {folder}\n\n{body}\n</skill>")


def skill_blocks(text: str) -> Iterator[tuple[str, str]]:
    """(name, version) of each skill block that opens a text: only a block at the start counts, so a
    file that merely mentions the tag is not taken for a loaded skill."""
    match = SKILL_BLOCK.match(text)
    if match is not None:
        yield match.group("name"), match.group("version")


def users_words(message: Message) -> str:
    """A request's text without the skill body `/skill` put before it: the body is the skill author's
    instructions, not rules the person gave (they are never proposed as constraints, never weighed as
    the request against higher-ranked policy)."""
    if not any(isinstance(p, TextPart) and SKILL_BLOCK.match(p.text) for p in message.parts):
        return message.text
    return "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart) and not SKILL_BLOCK.match(p.text))
