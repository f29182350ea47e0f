"""The Idempotency-Key lease lasts as long as its request (PostgreSQL, real threads): a request that runs far
past the lease's length is never run a second time by a retry; a request whose process died frees the key."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone
from rest_framework.test import APIClient

from partners.idempotency.models import IdempotencyKey
from quotes.models import Quote
from tests.conftest import assert_error
from tests.orders.factories import order_row

from .conftest import REPLAYED, keyed

pytestmark = pytest.mark.django_db(transaction=True)
LEASE = 0.6  # seconds; renewed every 0.2 s while the request runs


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_a_request_running_past_the_lease_is_not_run_again_by_retries(auth_client, settings, monkeypatch):
    from quotes import services

    assert connection.vendor == "postgresql"
    settings.IDEMPOTENCY_LEASE_SECONDS = LEASE
    row = order_row(available_quantity=10)
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    runs: list[float] = []
    inside = threading.Event()
    real = services.quote_create

    def slow_quote_create(**kwargs):
        runs.append(time.monotonic())
        inside.set()
        time.sleep(LEASE * 5)  # like a request nginx gave up on at 60 s while gunicorn still runs it
        return real(**kwargs)

    monkeypatch.setattr(services, "quote_create", slow_quote_create)
    first: list = []

    def run_first() -> None:
        try:
            first.append(_client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("long")))
        finally:
            connections.close_all()

    thread = threading.Thread(target=run_first)
    thread.start()
    retries = []
    try:
        assert inside.wait(timeout=30)
        # The client retries again and again, each time well past the lease's original end.
        for _ in range(3):
            time.sleep(LEASE * 1.2)
            retries.append(
                _client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("long"))
            )
    finally:
        thread.join(timeout=60)

    assert len(runs) == 1, f"the request ran {len(runs)} times"
    for retry in retries:
        assert_error(retry, 409, "IDEMPOTENCY_KEY_IN_USE")
    assert first[0].status_code == 201, first[0].content
    assert Quote.objects.count() == 1
    replay = _client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("long"))
    assert replay.headers[REPLAYED] == "true"
    assert replay.json()["data"]["quote_id"] == first[0].json()["data"]["quote_id"]
    # Answered: the lease is gone, and nothing renews it any more.
    time.sleep(LEASE)
    assert IdempotencyKey.objects.get(key="long").locked_until is None


def test_a_key_whose_request_died_is_free_one_lease_later(auth_client, partner, settings):
    settings.IDEMPOTENCY_LEASE_SECONDS = LEASE
    row = order_row(available_quantity=10)
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    first = auth_client.post("/v1/quotes", body, format="json", **keyed("dead"))
    assert first.status_code == 201
    # Made into a claim whose process died before answering: nobody renews it.
    record = IdempotencyKey.objects.get(key="dead")
    IdempotencyKey.objects.filter(pk=record.pk).update(
        response_status=None,
        response_body=None,
        completed_at=None,
        locked_until=timezone.now() + timedelta(seconds=LEASE),
    )
    assert_error(
        auth_client.post("/v1/quotes", body, format="json", **keyed("dead")), 409, "IDEMPOTENCY_KEY_IN_USE"
    )
    time.sleep(LEASE * 1.5)
    again = auth_client.post("/v1/quotes", body, format="json", **keyed("dead"))
    assert again.status_code == 201 and again.headers.get(REPLAYED) is None
