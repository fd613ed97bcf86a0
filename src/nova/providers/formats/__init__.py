"""Converters between nova messages and provider wire shapes, in both directions.

One module per shape: `anthropic` (Messages API), `openai_chat` (Chat Completions, also used by
OpenAI-compatible servers) and `openai_responses` (Responses API input items). Each has a
`request_to_*` that builds the keyword arguments for the SDK call, including cache breakpoints, and a
`*_from_*` that reads the shape back, so round trips can be tested. Tool arguments that are not valid
JSON never raise: they become `{"__invalid_arguments__": raw}` (see `parse_arguments`).
"""

from nova.providers.formats._common import INVALID_ARGUMENTS_KEY, dump_arguments, parse_arguments
from nova.providers.formats.anthropic import (
    messages_from_anthropic,
    messages_to_anthropic,
    request_to_anthropic,
)
from nova.providers.formats.openai_chat import messages_from_chat, messages_to_chat, request_to_chat
from nova.providers.formats.openai_responses import (
    input_from_responses,
    input_to_responses,
    request_to_responses,
)

__all__ = [
    "INVALID_ARGUMENTS_KEY",
    "dump_arguments",
    "input_from_responses",
    "input_to_responses",
    "messages_from_anthropic",
    "messages_from_chat",
    "messages_to_anthropic",
    "messages_to_chat",
    "parse_arguments",
    "request_to_anthropic",
    "request_to_chat",
    "request_to_responses",
]
