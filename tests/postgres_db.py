"""A private schema on the test PostgreSQL for one test (`NOVA_TEST_DATABASE_URL`, set by .ci/postgres).

Tests that need the database take the `pg_url` fixture (from `pg_fixture`); without the variable, or
without the `postgres` extra, they skip and say why.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

SKIP_REASON = ("no test PostgreSQL: start one with `eval \"$(bash .ci/postgres start)\"` "
               "(sets NOVA_TEST_DATABASE_URL)")


def base_url() -> str | None:
    url = os.environ.get("NOVA_TEST_DATABASE_URL", "")
    if not url or importlib.util.find_spec("psycopg_pool") is None:
        return None
    return url


def require_base_url() -> str:
    url = base_url()
    if url is None:
        pytest.skip(SKIP_REASON if importlib.util.find_spec("psycopg_pool") else
                    "the postgres extra is not installed (pip install 'nova-agent[postgres]')")
    return url


def with_schema(url: str, schema: str) -> str:
    """`url` with every connection's search_path set to `schema`."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


def fresh_schema() -> Iterator[str]:
    """A URL whose tables live in a new, empty schema, dropped afterwards."""
    import psycopg

    from nova.sessions.postgres import close_pools

    base = require_base_url()
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        close_pools()
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
