"""What an order writes to PostgreSQL's write-ahead log, in bytes: its creation, its confirmation and its
notifications' deliveries.

    DATABASE_URL=postgres://…/ps_x REDIS_URL=redis://…/N \\
      .venv/bin/python -m pytest -q -s --create-db bench/order_wal.py

A pytest module (for its test database) run by path, never part of the suites. Every row, every new version of a
row and every index entry an order's life writes goes through the log, so its bytes follow what the database
does for an order, and they repeat from run to run (to a few bytes), where CPU time moves with the machine's
load. The bench's order (a ``mobile_transfer`` order of a quote made by ``POST /v1/quotes`` and written by the
batched writer, through Django's test client, committed; Celery not eager), ``N`` times after 20 warm-up orders;
then the confirmation batches until none is left (``payouts.lifecycle.confirmation``), then the delivery of every
notification not yet delivered (``order.created`` and ``order.status_changed``), 50 a batch, as a worker does.
The server's log position before and after each step (``pg_current_wal_lsn``): nothing else may write to the
server meanwhile.
"""

import pytest
from django.db import connection
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from rest_framework.test import APIClient

from bench.order_cost import _quotes
from config.celery import app as celery_app
from orders import delivery
from orders.models import Notification, Order
from payouts.lifecycle import confirmation
from tests.conftest import issue_token, make_partner
from tests.orders.factories import order_row

N = 300


def lsn() -> str:
    with connection.cursor() as c:
        c.execute("SELECT pg_current_wal_lsn()")
        return c.fetchone()[0]


def since(start: str) -> float:
    with connection.cursor() as c:
        c.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [start])
        return float(c.fetchone()[0])


def _order(client: APIClient, quote_id: str) -> None:
    fields = {"quote_id": quote_id, "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}
    response = client.post("/v1/orders", encode_multipart(BOUNDARY, fields), content_type=MULTIPART_CONTENT)
    assert response.status_code == 201, response.content


@pytest.mark.django_db(transaction=True)
def test_wal_per_order(settings):
    # As in the bench: the limiter counts every request but never refuses one.
    celery_app.conf.task_always_eager = False
    settings.RATE_LIMIT_PER_MINUTE = 10**9
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    creds = make_partner()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    row = order_row(available_quantity=10**7)
    ids = _quotes(client, row, N + 20)
    for q in ids[:20]:
        _order(client, q)
    while confirmation.orders_confirm_batch().claimed:
        pass
    out = []
    start = lsn()
    for q in ids[20:]:
        _order(client, q)
    out.append(("creation", since(start)))
    start = lsn()
    while confirmation.orders_confirm_batch().claimed:
        pass
    out.append(("confirmation", since(start)))
    assert Order.objects.filter(status="awaiting_transfer").count() == N + 20
    start = lsn()
    pending = list(Notification.objects.filter(dispatched_at__isnull=True).values_list("pk", flat=True))
    for i in range(0, len(pending), 50):
        delivery.notifications_deliver(deliveries=[(pk, None) for pk in pending[i : i + 50]])
    out.append((f"deliveries ({len(pending)} notifications)", since(start)))
    print()
    for name, b in out:
        print(f"WAL {name}: {b / N:.0f} bytes per order")
