"""What the Celery worker's share of a quote and of an order costs, in CPU: the quotes' batched writer per quote
(the worker's process and PostgreSQL's backend), and an order's confirmation per order with its seller e-mail
on its own.

    DATABASE_URL=postgres://…/ps_x REDIS_URL=redis://…/N \\
      .venv/bin/python -m pytest -q -s --create-db bench/worker_cost.py

A pytest module (for its test database) run by path, never part of the suites, like ``order_wal.py``. Quotes are
made by ``POST /v1/quotes`` through Django's test client and kept in Redis, then written by
``quotes.services.quotes_flush`` in runs of ``QUOTES`` (the median of ``ROUNDS``); orders are made by
``POST /v1/orders`` and confirmed by ``payouts.lifecycle.confirmation.orders_confirm_batch`` as the worker runs it,
the e-mails written by Django's file backend (a message is serialised as the SMTP backend serialises it). CPU is
``time.process_time`` for this process; PostgreSQL's backend is read from ``/proc`` (the server on this machine),
in clock ticks, so its figure needs runs of a few thousand quotes.
"""

import os
import statistics
import time

import pytest
from django.db import connection
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from bench.order_cost import _quotes, authenticated_client
from config.celery import app as celery_app
from orders import seller_mail
from orders.models import Order
from payouts.lifecycle import confirmation
from quotes import services as quote_services
from tests.orders.factories import order_row

QUOTES = 2000
ROUNDS = 3
ORDERS = 300


def _backend_seconds() -> float | None:
    """CPU time of this connection's PostgreSQL backend so far (None when the server is not on this machine)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.django_db(transaction=True)
def test_worker_cpu_per_quote_written(settings):
    celery_app.conf.task_always_eager = False
    settings.RATE_LIMIT_PER_MINUTE = 10**9
    client = authenticated_client()
    row = order_row(available_quantity=10**7)
    _quotes(client, row, 50, written=False)
    quote_services.quotes_flush_all()
    own, database = [], []
    for _ in range(ROUNDS):
        _quotes(client, row, QUOTES, written=False)
        started, backend = time.process_time(), _backend_seconds()
        assert quote_services.quotes_flush(limit=QUOTES) == QUOTES
        own.append((time.process_time() - started) / QUOTES * 1e6)
        if backend is not None:
            database.append((_backend_seconds() - backend) / QUOTES * 1e6)
    print()
    print(
        f"the quotes' writer, {QUOTES} quotes a run: {statistics.median(own):.1f} us of the worker per quote"
    )
    if database:
        print(f"  PostgreSQL's backend: {statistics.median(database):.1f} us per quote")


@pytest.mark.django_db(transaction=True)
def test_worker_cpu_per_order_confirmed(settings, tmp_path):
    celery_app.conf.task_always_eager = False
    settings.RATE_LIMIT_PER_MINUTE = 10**9
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    client = authenticated_client()
    row = order_row(available_quantity=10**7)
    for quote_id in _quotes(client, row, ORDERS):
        fields = {"quote_id": quote_id, "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}
        response = client.post(
            "/v1/orders", encode_multipart(BOUNDARY, fields), content_type=MULTIPART_CONTENT
        )
        assert response.status_code == 201, response.content
    started = time.process_time()
    while confirmation.orders_confirm_batch().claimed:
        pass
    confirmed = (time.process_time() - started) / ORDERS * 1000
    assert Order.objects.filter(status="awaiting_transfer").count() == ORDERS
    orders = list(Order.objects.select_related("partner", "event__venue", "quote"))
    started = time.process_time()
    for order in orders:
        seller_mail.send_order_confirmation(order=order, to="seller@example.com")
    mailed = (time.process_time() - started) / ORDERS * 1000
    print()
    print(f"an order's confirmation, {ORDERS} orders in batches: {confirmed:.3f} ms of the worker per order")
    print(f"  its seller e-mail alone, rendered and written: {mailed:.3f} ms")
