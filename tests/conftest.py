"""Test-wide guards: no real model request, no network beyond loopback, a private NOVA_HOME."""

from __future__ import annotations

import ipaddress
import socket
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

