"""The web CPU of ``POST /v1/orders``, in-process, per order.

    DATABASE_URL=postgres://…/ps_x REDIS_URL=redis://…/N \\
      .venv/bin/python -m pytest -q -s --create-db bench/order_cost.py
    ORDER_COST_PROFILE=1 …  # and a cProfile of one round, by own time and by cumulative time

A pytest module (for its test database) run by path, never part of the suites. The bench's order
(bench/README.md "orders"): a multipart ``mobile_transfer`` order, ready to deliver, of a quote made by
``POST /v1/quotes`` and written by the batched writer, the body encoded beforehand, through Django's test
client, committed as under gunicorn; Celery not eager, so each order's publish goes to the Redis broker. The CPU
time (``time.process_time``) of each request is taken alone; the figure is the median of a round, after 20
warm-up orders, for three rounds, next to ``GET /healthz`` measured the same way (the client and the
middleware alone). The rate limit is set out of reach, as in the bench.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import time

import pytest
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from rest_framework.test import APIClient

from config.celery import app as celery_app
from quotes.services import quotes_flush_all
from tests.conftest import issue_token, make_partner
from tests.orders.factories import order_row

ROUNDS = 3
PER_ROUND = 300
WARM_UP = 20


def _cpu_ms(call) -> float:
    started = time.process_time()
    call()
    return (time.process_time() - started) * 1000


def authenticated_client() -> APIClient:
    """A test client with the bearer token of a new partner (with payment methods)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, make_partner())}")
    return client


def _quotes(client: APIClient, row, count: int, *, written: bool = True) -> list[str]:
    """``count`` quotes of ``row`` made by ``POST /v1/quotes``; with ``written``, the batched writer then copies them
    to the database (else they wait in Redis for it)."""
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 1,
    }
    ids = []
    for _ in range(count):
        response = client.post("/v1/quotes", body, format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["data"]["quote_id"])
    if written:
        quotes_flush_all()
    return ids


@pytest.mark.django_db(transaction=True)
def test_web_cpu_per_order(settings):
    celery_app.conf.task_always_eager = False
    # As in the bench: the limiter counts every request but never refuses one.
    settings.RATE_LIMIT_PER_MINUTE = 10**9
    client = authenticated_client()
    row = order_row(available_quantity=10**7)
    bodies = [
        encode_multipart(
            BOUNDARY,
            {"quote_id": quote_id, "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"},
        )
        for quote_id in _quotes(client, row, WARM_UP + ROUNDS * PER_ROUND)
    ]

    def order(body: bytes):
        def call():
            response = client.post("/v1/orders", body, content_type=MULTIPART_CONTENT)
            assert response.status_code == 201, response.content

        return call

    def healthz():
        assert client.get("/healthz").status_code == 200

    for body in bodies[:WARM_UP]:
        order(body)()
    profile = cProfile.Profile(time.process_time) if os.environ.get("ORDER_COST_PROFILE") else None
    lines = []
    for n in range(ROUNDS):
        start = WARM_UP + n * PER_ROUND
        round_bodies = bodies[start : start + PER_ROUND]
        if profile is not None and n == ROUNDS - 1:
            profile.enable()
        orders = [_cpu_ms(order(body)) for body in round_bodies]
        if profile is not None:
            profile.disable()
        bare = [_cpu_ms(healthz) for _ in range(PER_ROUND)]
        lines.append(
            f"round {n + 1}: order {statistics.median(orders):.3f} ms (p10 {statistics.quantiles(orders, n=10)[0]:.3f},"
            f" p90 {statistics.quantiles(orders, n=10)[-1]:.3f}), /healthz {statistics.median(bare):.3f} ms"
        )
    print("\n" + "\n".join(lines))
    if profile is not None:
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(45)
        stats.sort_stats("cumulative").print_stats(70)
