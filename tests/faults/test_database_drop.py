"""The database connection dies in the middle of an order: 500 in the envelope, nothing half-written, and
the next request is served on a fresh connection (production shape: gunicorn, psycopg pool)."""

import threading

import psycopg
import pytest

from catalog.models import Row
from orders.models import Order, OrderStatusHistory
from quotes.models import Quote
from tests.quotes.factories import quotes_written

from .conftest import ORDER_FORM, quote_body
from .live import bearer_auth, database_url_of_tests, http, production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _backend_waiting_on(table: str) -> int | None:
    with psycopg.connect(database_url_of_tests(), autocommit=True) as conn:
        found = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE %s",
            [f"%{table}%"],  # the order's statement that takes from the row (on PostgreSQL, one WITH)
        ).fetchone()
    return found[0] if found else None


def test_connection_killed_mid_order_gives_500_and_leaves_no_half_written_order(processes, row, creds):
    url = processes.web(production_env())
    auth = bearer_auth(url, creds)
    quote = http("POST", url + "/v1/quotes", json_body=quote_body(row), headers=auth)
    assert quote.status == 201, quote.body
    form = {"quote_id": quote.body["data"]["quote_id"], **ORDER_FORM}

    # Another session holds the row: the order's transaction consumes the quote, then waits on the row.
    table = Row._meta.db_table
    locker = psycopg.connect(database_url_of_tests())
    locker.execute(f'SELECT 1 FROM "{table}" WHERE id = %s FOR UPDATE', [row.pk])
    replies = []
    request = threading.Thread(
        target=lambda: replies.append(http("POST", url + "/v1/orders", form=form, headers=auth))
    )
    request.start()
    try:
        assert wait_for(lambda: _backend_waiting_on(table) is not None), "the order never reached the row"
        # The server side of the web process's connection dies mid-transaction.
        with psycopg.connect(database_url_of_tests(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [_backend_waiting_on(table)])
    finally:
        locker.rollback()
        locker.close()
        request.join(timeout=30)

    reply = replies[0]
    assert reply.status == 500, reply.body
    assert reply.body["success"] is False and reply.code == "INTERNAL_ERROR"
    assert reply.body["meta"]["request_id"] == reply.headers["X-Request-ID"]
    assert "terminat" not in reply.body["error"]["message"].lower()  # no internals leak to the partner

    # Nothing of the order survived: the quote is still unused and the row still has all its tickets.
    assert Order.objects.count() == 0
    assert OrderStatusHistory.objects.count() == 0
    quotes_written()
    assert Quote.objects.filter(consumed_at__isnull=False).count() == 0
    row.refresh_from_db()
    assert row.available_quantity == 10

    # The next requests are served (the dead connection left the pool) and the same quote still works.
    assert http("GET", url + "/v1/events", headers=auth).status == 200
    again = http("POST", url + "/v1/orders", form=form, headers=auth)
    assert again.status == 201, again.body
    assert Order.objects.count() == 1
    row.refresh_from_db()
    assert row.available_quantity == 9
