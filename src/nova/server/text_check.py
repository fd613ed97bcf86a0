"""`TextCheck`: a request body is JSON text Nova can keep, or it is refused with 422 naming the field.

The API takes JSON bodies only. What reaches a route is valid UTF-8, parses as JSON without nesting
deeper than `MAX_DEPTH`, and holds no string (value or key) with a lone surrogate (`"\\ud800"` is valid
JSON but no valid text: UTF-8 cannot carry it) or a NUL (which ends a string for much of what a prompt
or a title is handed to: C libraries, terminals, subprocess arguments). Anything else gets one 422
answer, `{"detail": [{"type", "loc", "msg"}]}` in FastAPI's own shape, `loc` naming the field
(`["body", "messages", 0, "parts", 0, "text"]`), before any route or session sees it: the session the
request named is untouched.

Plain ASGI, so it covers every route, and it runs after the token check (a body from a caller without
the token is never parsed) and inside the size limit (the body it buffers is bounded).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nova.sessions.schema import json_text

__all__ = ["MAX_DEPTH", "TextCheck", "body_problem"]

MAX_DEPTH = 64
"""Far deeper than any body the API or the AI SDK sends (about 6 levels), far shallower than what makes a
parser or a validator recurse out of stack."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

Problem = dict[str, Any]


def _problem(kind: str, loc: list[str | int], msg: str) -> Problem:
    return {"type": kind, "loc": loc, "msg": msg}


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start}; text must be valid Unicode"
    if "\x00" in text:
        return f"a NUL character at character {text.index(chr(0))}"
    return None


def body_problem(body: bytes) -> Problem | None:
    """Why `body` is not JSON text the API takes, as a FastAPI-shaped error item; None when it is."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _problem("utf8_invalid", ["body"],
                        f"the body is not valid UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start})")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return _problem("json_invalid", ["body"], f"the body is not JSON: {exc.msg} (offset {exc.pos})")
    except RecursionError:
        return _problem("json_too_deep", ["body"], f"the body nests deeper than {MAX_DEPTH} levels")
    except ValueError as exc:  # a number past the int conversion limit
        return _problem("json_invalid", ["body"], f"the body is not JSON Nova takes: {exc}")
    # Iterative, so no body can make the walk itself recurse too deep.
    stack: list[tuple[Any, list[str | int]]] = [(value, ["body"])]
    while stack:
        item, loc = stack.pop()
        if len(loc) > MAX_DEPTH + 1:
            return _problem("json_too_deep", loc[:8], f"the body nests deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            if (why := _text_problem(item)) is not None:
                return _problem("text_invalid", loc, why)
        elif isinstance(item, dict):
            for key, child in item.items():
                if (why := _text_problem(key)) is not None:
                    return _problem("text_invalid", loc, f"a key holds {why}")
                stack.append((child, [*loc, key]))
        elif isinstance(item, list):
            stack.extend((child, [*loc, n]) for n, child in enumerate(item))
    return None


class TextCheck:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before its body was in: nobody to answer
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body and (problem := body_problem(body)) is not None:
            payload = json_text({"detail": [problem]}, separators=(",", ":")).encode("utf-8")
            await send({"type": "http.response.start", "status": 422,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
