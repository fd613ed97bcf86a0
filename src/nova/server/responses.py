"""`SafeJSONResponse`: JSON answers that cannot fail on the text they carry.

Records keep any text losslessly, lone surrogates included (a badly encoded terminal, bytes a tool could
not decode); FastAPI's own JSON rendering raises on those, which turned reading such a session into a
500. Here a lone surrogate is written as a JSON escape (`json_text`), so the answer is valid UTF-8 and
the client reads back the same string.
"""

from __future__ import annotations

from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import Request

from nova.sessions.schema import json_text

__all__ = ["SafeJSONResponse", "validation_error"]


class SafeJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json_text(content, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def validation_error(_: Request, exc: Exception) -> SafeJSONResponse:
    """FastAPI's 422 for a body or parameter that does not fit its model, rendered safely: the error
    echoes the input, which may hold any text or bytes."""
    assert isinstance(exc, RequestValidationError)
    detail = jsonable_encoder(exc.errors(), custom_encoder={bytes: lambda b: b.decode("utf-8", "replace")})
    return SafeJSONResponse({"detail": detail}, status_code=422)
