"""Test-wide guards: no real model request, no network beyond loopback, a private NOVA_HOME."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nova.testing import forbid_model_requests

_real_connect = socket.socket.connect


def _is_local(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return True  # unix sockets


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        raise AssertionError(f"test tried to open a network connection to {address!r}")
    _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    with forbid_model_requests():
        yield


@pytest.fixture(autouse=True)
def nova_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own NOVA_HOME so nothing touches the developer's ~/.nova."""
    home = tmp_path / "nova-home"
    monkeypatch.setenv("NOVA_HOME", str(home))
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "NOVA_PROVIDER", "NOVA_MODEL", "NOVA_BASE_URL",
                "NOVA_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return home



# The NOVA_HOME of whoever runs the tests, before the session replaced it (tests/test_isolation.py). It is
# kept in the environment because an xdist worker starts with the environment of the controller, whose
# NOVA_HOME is already the controller's private one: the worker reads the invoker's from here.
_INVOKER = "NOVA_TESTS_INVOKING_HOME"
_SET_INVOKER = _INVOKER not in os.environ
if _SET_INVOKER:
    os.environ[_INVOKER] = os.environ.get("NOVA_HOME", "")
INVOKING_NOVA_HOME = os.environ[_INVOKER] or None
_SESSION_HOME: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """A private NOVA_HOME for the whole run, set before collection: module- and session-scoped fixtures
    (a tiktoken counter built once per module seeds its cache under NOVA_HOME) and code run at import
    start before the per-test `nova_home` applies, and must not reach the invoking user's home either."""
    home = Path(tempfile.mkdtemp(prefix="nova-tests-home-"))
    _SESSION_HOME.append(home)
    os.environ["NOVA_HOME"] = str(home)


def pytest_unconfigure(config: pytest.Config) -> None:
    for home in _SESSION_HOME:
        shutil.rmtree(home, ignore_errors=True)
    if INVOKING_NOVA_HOME is None:
        os.environ.pop("NOVA_HOME", None)
    else:
        os.environ["NOVA_HOME"] = INVOKING_NOVA_HOME
    if _SET_INVOKER:
        os.environ.pop(_INVOKER, None)
