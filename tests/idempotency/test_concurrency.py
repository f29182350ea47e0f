"""Idempotency-Key under real concurrency (PostgreSQL, real threads): the database decides who runs."""

import threading

import pytest
from django.db import connections
from rest_framework.test import APIClient

from catalog.models import Row
from orders.models import Order
from partners.idempotency.models import IdempotencyKey
from quotes.models import Quote
from tests.conftest import assert_error
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quotes_written

from .conftest import REPLAYED, keyed, order_form

pytestmark = pytest.mark.django_db(transaction=True)


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_sixteen_threads_with_one_key_run_the_order_once(auth_client, partner):
    row = order_row(available_quantity=10)
    quote = QuoteFactory(partner=partner, row=row, quantity=3)
    form = order_form(quote)
    barrier = threading.Barrier(16)
    responses: list = [None] * 16

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            responses[index] = _client(auth_client.token).post(
                "/v1/orders", dict(form), format="multipart", **keyed("one-order")
            )
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert all(r is not None for r in responses)
    executed = [r for r in responses if r.status_code == 201 and r.headers.get(REPLAYED) is None]
    replayed = [r for r in responses if r.status_code == 201 and r.headers.get(REPLAYED) == "true"]
    busy = [r for r in responses if r.status_code == 409]
    assert len(executed) == 1, [(r.status_code, r.content[:120]) for r in responses]
    assert len(executed) + len(replayed) + len(busy) == 16, [r.status_code for r in responses]
    order_id = executed[0].json()["data"]["order_id"]
    assert {r.json()["data"]["order_id"] for r in replayed} <= {order_id}
    for response in busy:
        assert_error(response, 409, "IDEMPOTENCY_KEY_IN_USE")
        assert response.headers["Retry-After"] == "1"
    print(f"16 threads: 1 executed, {len(replayed)} replayed, {len(busy)} told to retry")

    assert Order.objects.filter(quote=quote).count() == 1
    assert Row.objects.get(pk=row.pk).available_quantity == 7
    # The clients told to retry get the order on their retry.
    retry = _client(auth_client.token).post(
        "/v1/orders", dict(form), format="multipart", **keyed("one-order")
    )
    assert retry.status_code == 201 and retry.headers[REPLAYED] == "true"
    assert retry.json()["data"]["order_id"] == order_id


def test_while_the_first_request_runs_a_retry_is_409_and_another_body_is_422(
    auth_client, partner, monkeypatch
):
    from quotes import services

    row = order_row(available_quantity=10)
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    inside, release = threading.Event(), threading.Event()
    real = services.quote_create

    def slow_quote_create(**kwargs):
        inside.set()
        assert release.wait(timeout=30)
        return real(**kwargs)

    monkeypatch.setattr(services, "quote_create", slow_quote_create)
    first: list = []

    def run_first() -> None:
        try:
            first.append(_client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("slow")))
        finally:
            connections.close_all()

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        assert inside.wait(timeout=30)
        client = _client(auth_client.token)
        other = client.post("/v1/quotes", {**body, "quantity": 3}, format="json", **keyed("slow"))
        same = client.post("/v1/quotes", body, format="json", **keyed("slow"))
    finally:
        release.set()
        thread.join(timeout=30)

    assert_error(other, 422, "IDEMPOTENCY_KEY_MISMATCH")  # compared first, even while the first runs
    assert_error(same, 409, "IDEMPOTENCY_KEY_IN_USE")
    assert same.headers["Retry-After"] == "1"
    assert first[0].status_code == 201, first[0].content
    quotes_written()
    assert Quote.objects.count() == 1
    record = IdempotencyKey.objects.get(key="slow")
    assert record.response_status == 201 and record.locked_until is None
    replay = _client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("slow"))
    assert replay.headers[REPLAYED] == "true"
    assert replay.json()["data"]["quote_id"] == first[0].json()["data"]["quote_id"]
