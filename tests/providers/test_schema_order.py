"""Tool schemas reach every provider with sorted keys, so a catalog rebuilt in another key order (a
resumed session, an MCP server) sends the same bytes and keeps the cached prefix (CCH-3)."""

from __future__ import annotations

import json

from nova.messages import Message
from nova.model import ModelRequest, ToolSpec
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


def test_anthropic_cache_writes_split_by_ttl_are_priced_each_at_its_rate() -> None:
    from nova.providers.anthropic import usage_from_anthropic
    from nova.providers.pricing import cost_usd

    usage = usage_from_anthropic({
        "input_tokens": 100, "output_tokens": 0, "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 3_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_000, "ephemeral_1h_input_tokens": 2_000},
    })
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (3_000, 2_000)
    # claude-sonnet-4-6: input $3/M, 5-minute writes $3.75/M, 1-hour writes $6/M.
    expected = (100 * 3.0 + 1_000 * 3.75 + 2_000 * 6.0) / 1_000_000
    assert cost_usd(usage, "claude-sonnet-4-6") == expected
    # Without the split, the request's TTL prices every write.
    plain = usage_from_anthropic({"input_tokens": 0, "cache_creation_input_tokens": 1_000})
    assert cost_usd(plain, "claude-sonnet-4-6", cache_ttl="1h") == 1_000 * 6.0 / 1_000_000
