"""Every connection of the service to PostgreSQL is killed (a failover, a restart, an idle cut): the
next requests are all served, none answers 5xx (production shape: gunicorn, psycopg pool)."""

import select
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.db import connection

from .conftest import quote_body
from .live import bearer_auth, database_url_of_tests, http, production_env

pytestmark = pytest.mark.django_db(transaction=True)


def _terminate_service_backends() -> int:
    """pg_terminate_backend on every backend of the test database but the test's own."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own = cursor.fetchone()[0]
    with psycopg.connect(database_url_of_tests(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), %s)",
            [own],
        ).fetchall()
    return len(rows)


@pytest.mark.parametrize(
    "pool_check",
    [
        pytest.param("true", id="pool-checks-connections"),
        # Without the pool's check every dead connection reaches a request: the retry alone must cope.
        pytest.param("false", id="retry-alone"),
    ],
)
def test_no_request_fails_after_every_database_connection_is_killed(processes, row, creds, pool_check):
    # Two workers: both keep pooled connections, one of them sits idle while the other serves.
    url = processes.web(production_env(DATABASE_POOL_CHECK=pool_check), workers=2)
    auth = bearer_auth(url, creds)
    event = row.section.event
    requests = [
        ("GET", f"/v1/events/{event.event_id}", None),
        ("GET", f"/v1/events/{event.event_id}/sections", None),
        ("GET", "/v1/orders", None),
        ("POST", "/v1/quotes", quote_body(row)),
        (
            "POST",
            "/v1/auth/token",
            {
                "client_id": creds.client_id,
                "client_secret": creds.client_secret,
                "grant_type": "client_credentials",
            },
        ),
    ]

    def send(i: int):
        method, path, body = requests[i % len(requests)]
        return http(method, url + path, json_body=body, headers=auth)

    # Warm every pooled connection of both workers.
    with ThreadPoolExecutor(8) as pool:
        warm = list(pool.map(send, range(40)))
    assert all(r.status < 500 for r in warm), [(r.status, r.body) for r in warm if r.status >= 500]

    assert _terminate_service_backends() >= 2
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(send, range(40)))
    print(f"after the kill: 40 requests, slowest {max(r.seconds for r in replies) * 1000:.0f} ms")
    failed = [(r.status, r.body) for r in replies if r.status >= 500]
    assert failed == [], f"{len(failed)} of 40 requests failed: {failed[:3]}"
    assert {r.status for r in replies} <= {200, 201}, {r.status for r in replies}


def _own_connection() -> psycopg.Connection:
    return psycopg.connect(database_url_of_tests(), autocommit=True)


def test_the_pool_check_lends_a_sound_connection_without_a_round_trip_and_pings_one_the_server_closed(
    monkeypatch,
):
    from psycopg_pool import ConnectionPool

    from config.deploy.postgresql.base import check_connection

    pinged = []
    real_ping = ConnectionPool.check_connection
    monkeypatch.setattr(
        ConnectionPool, "check_connection", lambda conn: pinged.append(conn) or real_ping(conn)
    )
    conn = _own_connection()
    try:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        check_connection(conn)
        assert pinged == []  # nothing on its socket: lent as it is
        with _own_connection() as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
        deadline = time.monotonic() + 5
        while not select.select([conn.fileno()], [], [], 0.05)[0] and time.monotonic() < deadline:
            pass
        with pytest.raises(psycopg.OperationalError):
            check_connection(conn)
        assert pinged == [conn]  # the server's goodbye was there: the ping found it dead
        with pytest.raises(psycopg.OperationalError):
            check_connection(conn)  # broken now: refused without a ping
        assert len(pinged) == 1
    finally:
        conn.close()


def test_the_service_pool_uses_that_check():
    from psycopg_pool import ConnectionPool

    from config.deploy.postgresql.base import check_connection

    assert connection.pool is not None  # the service's pool
    assert connection.pool._check is check_connection
    assert ConnectionPool.check_connection is not check_connection
