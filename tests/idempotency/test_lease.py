"""The Idempotency-Key lease lasts as long as its request (PostgreSQL, real threads): one keeper per process
renews the leases of every request it runs, so a request that runs far past the lease's length is never run a
second time by a retry; a request whose process died frees the key.

Every wait polls for a condition with a generous deadline: the renewal itself is asserted (the lease moved
past its first end while the request still ran), never inferred from how long a sleep lasted."""

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from rest_framework.test import APIClient

from partners.idempotency import services as idempotency_services
from partners.idempotency.models import IdempotencyKey
from quotes.models import Quote
from tests.conftest import assert_error
from tests.orders.factories import order_row
from tests.quotes.factories import quotes_written

from .conftest import REPLAYED, keyed

pytestmark = pytest.mark.django_db(transaction=True)
LEASE = 1.5  # seconds; renewed every 0.5 s while the request runs
DEADLINE = 60  # seconds: generous, for a busy 2-core machine


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def _until(condition: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"not within {DEADLINE} s: {what}")


def _lease_end(key: str):
    return IdempotencyKey.objects.filter(key=key).values_list("locked_until", flat=True).first()


def _body(row) -> dict:
    event = row.section.event
    return {"event_id": event.event_id, "section_name": row.section.name, "row_name": row.name, "quantity": 1}


@pytest.fixture
def held_quotes(monkeypatch):
    """``POST /v1/quotes`` blocks inside the service until the test releases it; each run is recorded."""
    from quotes import services

    runs: list[str] = []
    inside = threading.Semaphore(0)
    release = threading.Event()
    real = services.quote_create

    def held_quote_create(**kwargs):
        runs.append(kwargs.get("row_name") or "")
        inside.release()
        # Like a request nginx gave up on at 60 s while gunicorn still runs it.
        assert release.wait(DEADLINE), "the test never released the request"
        return real(**kwargs)

    monkeypatch.setattr(services, "quote_create", held_quote_create)
    yield runs, inside, release
    release.set()


def _post_in_thread(token: str, body: dict, key: str, into: list) -> threading.Thread:
    def run() -> None:
        try:
            into.append(_client(token).post("/v1/quotes", body, format="json", **keyed(key)))
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_request_running_past_the_lease_is_not_run_again_by_retries(auth_client, settings, held_quotes):
    settings.IDEMPOTENCY_LEASE_SECONDS = LEASE
    runs, inside, release = held_quotes
    body = _body(order_row(available_quantity=10))
    first: list = []
    thread = _post_in_thread(auth_client.token, body, "long", first)
    retries = []
    try:
        assert inside.acquire(timeout=DEADLINE)
        first_end = _until(lambda: _lease_end("long"), "the key is claimed")
        # The keeper renews the lease while the request runs: it moves past its first end...
        _until(lambda: _lease_end("long") > first_end, "the lease is renewed")
        # ...and the client's retries, each once the lease's first end has passed, find the request running.
        _until(lambda: timezone.now() > first_end, "the first lease's end passes")
        for _ in range(3):
            seen = _lease_end("long")
            _until(lambda seen=seen: _lease_end("long") > seen, "the lease is renewed again")
            retries.append(
                _client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("long"))
            )
    finally:
        release.set()
        thread.join(timeout=DEADLINE)

    assert len(runs) == 1, f"the request ran {len(runs)} times"
    for retry in retries:
        assert_error(retry, 409, "IDEMPOTENCY_KEY_IN_USE")
    assert first[0].status_code == 201, first[0].content
    quotes_written()
    assert Quote.objects.count() == 1
    replay = _client(auth_client.token).post("/v1/quotes", body, format="json", **keyed("long"))
    assert replay.headers[REPLAYED] == "true"
    assert replay.json()["data"]["quote_id"] == first[0].json()["data"]["quote_id"]
    # Answered: the lease is gone, and the keeper holds nothing of it any more.
    assert IdempotencyKey.objects.get(key="long").locked_until is None
    assert not idempotency_services.lease_keeper.held()


def test_one_keeper_renews_every_running_request_in_one_round(auth_client, settings, held_quotes):
    settings.IDEMPOTENCY_LEASE_SECONDS = LEASE
    runs, inside, release = held_quotes
    body = _body(order_row(available_quantity=10))
    keys = ["one", "two", "three"]
    answers: list = []
    threads = [_post_in_thread(auth_client.token, body, key, answers) for key in keys]
    try:
        for _ in keys:
            assert inside.acquire(timeout=DEADLINE)
        first_ends = {key: _until(lambda key=key: _lease_end(key), f"{key} is claimed") for key in keys}
        assert len(idempotency_services.lease_keeper.held()) == 3
        # One thread keeps every lease of the process, however many requests hold keys.
        keepers = [t for t in threading.enumerate() if t.name == "idempotency-lease"]
        assert len(keepers) == 1, keepers
        _until(lambda: all(_lease_end(key) > first_ends[key] for key in keys), "every lease is renewed")
    finally:
        release.set()
        for thread in threads:
            thread.join(timeout=DEADLINE)
    assert sorted(a.status_code for a in answers) == [201, 201, 201]
    assert not idempotency_services.lease_keeper.held()
    assert set(IdempotencyKey.objects.values_list("locked_until", flat=True)) == {None}


def test_a_key_whose_request_died_is_free_one_lease_later(auth_client, partner, settings):
    settings.IDEMPOTENCY_LEASE_SECONDS = LEASE
    body = _body(order_row(available_quantity=10))
    first = auth_client.post("/v1/quotes", body, format="json", **keyed("dead"))
    assert first.status_code == 201
    # Made into a claim whose process died before answering: nobody renews it.
    record = IdempotencyKey.objects.get(key="dead")
    lapses_at = timezone.now() + timedelta(seconds=LEASE)
    IdempotencyKey.objects.filter(pk=record.pk).update(
        response_status=None, response_body=None, completed_at=None, locked_until=lapses_at
    )
    assert_error(
        auth_client.post("/v1/quotes", body, format="json", **keyed("dead")), 409, "IDEMPOTENCY_KEY_IN_USE"
    )
    assert _lease_end("dead") == lapses_at  # not renewed: no running request of this process holds it
    _until(lambda: timezone.now() > lapses_at, "the dead request's lease lapses")
    again = auth_client.post("/v1/quotes", body, format="json", **keyed("dead"))
    assert again.status_code == 201 and again.headers.get(REPLAYED) is None
