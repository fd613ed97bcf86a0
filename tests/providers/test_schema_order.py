"""Tool schemas reach every provider with sorted keys, so a catalog rebuilt in another key order (a
resumed session, an MCP server) sends the same bytes and keeps the cached prefix (CCH-3)."""

from __future__ import annotations

import json

from nova.messages import Message
from nova.providers.base import ModelRequest, ToolSpec
from nova.providers.formats.anthropic import request_to_anthropic
from nova.providers.formats.openai_chat import request_to_chat
from nova.providers.formats.openai_responses import request_to_responses

SCHEMA_A = {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}
SCHEMA_B = {"properties": {"limit": {"type": "integer"}, "path": {"type": "string"}}, "required": ["path"], "type": "object"}


def request(schema: dict[str, object]) -> ModelRequest:
    return ModelRequest(model="m", messages=[Message.user("hi", id="u1", created_at=0.0)],
                        tools=[ToolSpec("read_file", "Read a file.", schema)])


def test_every_converter_sends_the_same_bytes_for_reordered_schemas() -> None:
    assert SCHEMA_A == SCHEMA_B
    for convert in (request_to_anthropic, request_to_chat, request_to_responses):
        first = json.dumps(convert(request(SCHEMA_A)))
        second = json.dumps(convert(request(SCHEMA_B)))
        assert first == second, convert.__name__
