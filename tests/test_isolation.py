"""The suite never writes into the invoking user's NOVA_HOME: not from a test, and not from a fixture
built once per module, which runs before the per-test `nova_home` fixture applies."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from nova.settings import nova_home
from nova.tokens.offline_tiktoken import TiktokenCounter, default_cache_dir


def _invoking_home() -> Path:
    from tests.conftest import INVOKING_NOVA_HOME  # the value before the run replaced it

    return Path(INVOKING_NOVA_HOME).expanduser() if INVOKING_NOVA_HOME else Path.home() / ".nova"


@pytest.fixture(scope="module")
def home_seen_by_a_module_fixture() -> tuple[Path, Path]:
    # Built before any function-scoped fixture, as tests/test_tokens.py's shared tiktoken counter is.
    TiktokenCounter("cl100k_base")
    return nova_home(), default_cache_dir()


def test_a_module_fixture_sees_a_private_home(home_seen_by_a_module_fixture: tuple[Path, Path]) -> None:
    home, cache = home_seen_by_a_module_fixture
    assert home != _invoking_home()
    assert home.is_relative_to(Path(tempfile.gettempdir()))
    assert cache.is_relative_to(home)


def test_each_test_gets_its_own_home(nova_home: Path) -> None:
    assert Path(os.environ["NOVA_HOME"]) == nova_home != _invoking_home()
