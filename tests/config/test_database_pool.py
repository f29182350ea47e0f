"""The service's PostgreSQL backend (config/deploy/postgresql): a process's pool is closed only if it made one."""

import psycopg_pool
import pytest
from django.db import connection

from config.deploy.postgresql.base import DatabaseWrapper


@pytest.fixture
def pools_made(monkeypatch) -> list:
    made = []
    real = psycopg_pool.ConnectionPool

    class Recording(real):
        def __init__(self, *args, **kwargs):
            made.append(kwargs.get("conninfo"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(psycopg_pool, "ConnectionPool", Recording)
    return made


def _wrapper(alias: str) -> DatabaseWrapper:
    options = {**connection.settings_dict["OPTIONS"], "pool": {"min_size": 1, "max_size": 2}}
    return DatabaseWrapper({**connection.settings_dict, "OPTIONS": options, "CONN_MAX_AGE": 0}, alias=alias)


def test_a_process_that_made_no_pool_closes_none_and_makes_none(pools_made):
    conn = _wrapper("pool-never-made")
    conn.close_pool_if_made()
    assert pools_made == [] and "pool-never-made" not in DatabaseWrapper._connection_pools


@pytest.mark.django_db
def test_a_pool_it_made_is_closed(pools_made):
    conn = _wrapper("pool-made")
    pool = conn.pool
    assert len(pools_made) == 1
    conn.close_pool_if_made()
    assert pool.closed and "pool-made" not in DatabaseWrapper._connection_pools
