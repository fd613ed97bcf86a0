"""Recorded provider bodies served through `httpx2.MockTransport`: the SDKs run for real, the network
never does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Recorder:
    """A MockTransport handler that answers with queued responses and keeps every request."""

    def __init__(self, *responses: httpx2.Response) -> None:
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.responses:
            raise AssertionError(f"unexpected extra request to {request.url}")
        return self.responses.pop(0)

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self))

    def body(self, index: int = -1) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.requests[index].content)
        return data


def sse_response(name: str) -> httpx2.Response:
    text = (FIXTURES / "provider_streams" / name).read_text()
    return httpx2.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def load_error(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "provider_errors" / f"{name}.json").read_text())
    return data


def error_response(name: str) -> httpx2.Response:
    data = load_error(name)
    headers = {"content-type": "application/json", **data["headers"]}
    return httpx2.Response(data["status"], content=json.dumps(data["body"]).encode(), headers=headers)


# Test modules are imported in importlib mode and cannot import this file, so helpers come as fixtures.
@pytest.fixture
def recorder() -> Callable[..., Recorder]:
    return Recorder


@pytest.fixture
def sse() -> Callable[[str], httpx2.Response]:
    return sse_response


@pytest.fixture
def http_error() -> Callable[[str], httpx2.Response]:
    return error_response


@pytest.fixture
def recorded_error() -> Callable[[str], dict[str, Any]]:
    return load_error
