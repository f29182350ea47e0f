"""Quotes kept in Redis first: a quote request writes no row, the batched writer or the order that uses the
quote writes it, and a Redis loss takes nothing a partner was promised (quotes/quote_cache.py,
quotes.services, quotes.codec's self-contained ids)."""

import threading
import time
from datetime import UTC, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from catalog.models import Row
from orders.models import Order
from orders.seller_mail import seller_recipient
from quotes import quote_cache, services
from quotes.codec import MAX_QUOTE_ID_CHARS, QuoteClaims, decode_quote_claims
from quotes.models import Quote
from tests.conftest import assert_error, issue_token, make_partner

pytestmark = pytest.mark.django_db

SELLER = {
    "first_name": "Ada",
    "last_name": "Quill",
    "email": "ada@seller.example",
    "phone_number": "+15550101",
}
ORDER_FORM = {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}


def _quote(client, **overrides) -> dict:
    body = {
        "event_id": overrides.pop("event_id"),
        "section_name": "Lower 101",
        "row_name": "B",
        "quantity": 2,
    }
    body.update(user_metadata=SELLER, **overrides)
    response = client.post("/v1/quotes", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["data"]


def _order(client, quote_id: str, **form):
    return client.post("/v1/orders", {**ORDER_FORM, "quote_id": quote_id, **form}, format="multipart")


def _redis_lost() -> None:
    """Everything Redis held is gone (FLUSHDB): the quotes' copies and the writer's pending list."""
    cache.clear()


def test_a_quote_request_writes_no_row_the_writer_does(auth_client, event):
    _quote(auth_client, event_id=event.event_id)  # warm: the payment readiness, the statements
    services.quotes_flush()
    with CaptureQueriesContext(connection) as queries:
        data = _quote(auth_client, event_id=event.event_id)
    assert [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("INSERT")] == []
    assert len(queries) == 1, [q["sql"] for q in queries]  # the catalog's row, nothing else
    claims = decode_quote_claims(data["quote_id"])
    assert isinstance(claims, QuoteClaims) and not Quote.objects.filter(pk=claims.pk).exists()
    assert len(data["quote_id"]) <= MAX_QUOTE_ID_CHARS

    # Read before its row exists: Redis's copy answers, the same as the 201.
    detail = auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"]
    assert detail == {**data, "order_id": None}

    assert services.quotes_flush() == 1
    quote = Quote.objects.get(pk=claims.pk)
    assert quote.user_metadata == SELLER and quote.offer_price == Decimal("120.50") and quote.quantity == 2
    assert services.quotes_flush() == 0  # taken off the list
    assert auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"] == detail


def test_the_writer_is_at_least_once_and_skips_what_is_written(auth_client, event):
    first = _quote(auth_client, event_id=event.event_id)
    assert _order(auth_client, first["quote_id"]).status_code == 201  # the order wrote it first
    _quote(auth_client, event_id=event.event_id)
    # A writer that died before trimming: the next run finds both again and writes only what is missing.
    assert len(quote_cache.quotes_pending()) == 2
    assert services.quotes_flush() == 2
    assert Quote.objects.count() == 2
    assert Quote.objects.filter(consumed_at__isnull=False).count() == 1


def test_the_writer_drops_a_quote_whose_partner_is_gone(auth_client, event):
    creds = make_partner(name="Brief", email="brief@example.com")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    _quote(client, event_id=event.event_id)
    _quote(auth_client, event_id=event.event_id)
    creds.partner.delete()
    assert services.quotes_flush() == 2
    assert Quote.objects.count() == 1


def test_an_order_writes_the_quote_it_uses(auth_client, event):
    _order(auth_client, _quote(auth_client, event_id=event.event_id)["quote_id"])
    data = _quote(auth_client, event_id=event.event_id)
    response = _order(auth_client, data["quote_id"])
    assert response.status_code == 201, response.content
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])
    quote = order.quote
    assert quote.consumed_at == order.created_at and quote.user_metadata == SELLER
    assert seller_recipient(order) == "ada@seller.example"
    assert order.total_price == Decimal("241.00")
    assert Row.objects.get(pk=quote.row_id).available_quantity == 16 - 2 - 2
    assert auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"]["order_id"] == order.order_id
    assert_error(_order(auth_client, data["quote_id"]), 422, "QUOTE_ALREADY_CONSUMED")
    services.quotes_flush()  # the writer comes after the order: the quote stays consumed, written once
    assert Quote.objects.get(pk=quote.pk).consumed_at == order.created_at


def test_a_quote_of_another_partner_or_mode_is_refused_before_any_read(auth_client, other_auth_client, event):
    data = _quote(auth_client, event_id=event.event_id)
    with CaptureQueriesContext(connection) as queries:
        assert_error(_order(other_auth_client, data["quote_id"]), 403, "FORBIDDEN")
    assert not [q for q in queries if "quotes_quote" in q["sql"]]
    assert_error(other_auth_client.get(f"/v1/quotes/{data['quote_id']}"), 403, "FORBIDDEN")


def test_after_a_redis_loss_an_open_quote_keeps_its_price_quantity_and_expiry(auth_client, event):
    data = _quote(auth_client, event_id=event.event_id)
    row = Row.objects.get(section__event=event, section__name="Lower 101", name="B")
    row.offer_price = Decimal("80.00")  # the price moves after the quote
    row.save(update_fields=["offer_price"])
    _redis_lost()
    assert services.quotes_flush() == 0  # the pending list went with Redis

    detail = auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"]
    # Rebuilt from its id: the same price, quantity, expiry and names (the catalog's, unchanged here).
    assert detail == {**data, "order_id": None}
    response = _order(auth_client, data["quote_id"])
    assert response.status_code == 201, response.content
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])
    assert order.offer_price == Decimal("120.50") and order.total_price == Decimal("241.00")
    assert order.quote_expires_at == Quote.objects.get(pk=order.quote_id).expires_at
    assert utc(order.quote_expires_at) == data["expires_at"]
    # The seller's contact lived only in Redis: the confirmation goes to the partner's contact e-mail (or the
    # order's seller_email) instead.
    assert order.quote.user_metadata == {}
    assert seller_recipient(order) == order.partner.contact_email
    assert_error(_order(auth_client, data["quote_id"]), 422, "QUOTE_ALREADY_CONSUMED")


def test_after_a_redis_loss_an_expired_quote_is_still_expired(auth_client, event):
    data = _quote(auth_client, event_id=event.event_id)
    _redis_lost()
    with time_machine.travel(timezone.now() + timedelta(seconds=901), tick=False):
        body = assert_error(_order(auth_client, data["quote_id"]), 422, "QUOTE_EXPIRED")
        assert body["details"]["expired_at"] == data["expires_at"]
        assert auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"]["status"] == "expired"


def test_the_admin_lists_a_quote_made_a_moment_ago(auth_client, client, event):
    user = get_user_model().objects.create_superuser("staff", "staff@buyback.example", "pw-for-tests-only")
    client.force_login(user)
    data = _quote(auth_client, event_id=event.event_id)
    page = client.get("/admin/quotes/quote/").content.decode()
    assert "Harbor Lights Tour" in page
    found = client.get("/admin/quotes/quote/", {"q": data["quote_id"]}).content.decode()
    assert (
        data["quote_id"]
        in client.get(
            f"/admin/quotes/quote/{decode_quote_claims(data['quote_id']).pk}/change/"
        ).content.decode()
    )
    assert found.count("<tr>") == 2 and "Harbor Lights Tour" in found  # the header and the quote


def test_a_quote_request_while_redis_is_down_writes_the_row(auth_client, event, monkeypatch):
    def down(quote):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(quote_cache, "quote_pending_add", down)
    data = _quote(auth_client, event_id=event.event_id)
    assert Quote.objects.filter(pk=decode_quote_claims(data["quote_id"]).pk).exists()


@pytest.mark.django_db(transaction=True)
def test_sixteen_orders_at_once_with_one_quote_not_yet_written_give_one_order(partner_creds, event):
    client = APIClient()
    token = issue_token(client, partner_creds)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    data = _quote(client, event_id=event.event_id)
    barrier = threading.Barrier(17)
    responses: list = [None] * 16

    def order(index: int) -> None:
        mine = APIClient()
        mine.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            barrier.wait(timeout=30)
            responses[index] = _order(mine, data["quote_id"])
        finally:
            connections.close_all()

    def writer() -> None:  # the batched writer runs in the middle of the race
        try:
            barrier.wait(timeout=30)
            services.quotes_flush()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=order, args=(i,)) for i in range(16)] + [
        threading.Thread(target=writer)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] + [422] * 15, [r.content[:200] for r in responses]
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 422} == {
        "QUOTE_ALREADY_CONSUMED"
    }
    assert Order.objects.count() == 1 and Quote.objects.count() == 1
    assert Row.objects.get(section__event=event, section__name="Lower 101", name="B").available_quantity == 14


def utc(value) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_purged_quote_still_answers_expired(auth_client, api_client, partner_creds, event):
    data = _quote(auth_client, event_id=event.event_id)
    services.quotes_flush()
    with time_machine.travel(timezone.now() + timedelta(days=31), tick=False):
        assert services.quote_purge_expired() == 1
        _redis_lost()  # its copy in Redis has long expired too
        assert not Quote.objects.exists()
        auth_client = api_client
        auth_client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(api_client, partner_creds)}")
        assert auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"]["status"] == "expired"
        assert_error(_order(auth_client, data["quote_id"]), 422, "QUOTE_EXPIRED")


def _waiting_on(table: str) -> int:
    """How many other sessions wait for a lock on ``table`` (the writers held back by the test's lock)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE relation = %s::regclass AND NOT granted", [table])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_writer_that_outlives_its_lock_loses_no_quote(partner_creds, event, monkeypatch):
    """Two runs of the writer, the first held back past its lock's expiry (its insert waits for a table lock):
    each takes off exactly the entries it wrote, so quotes appended meanwhile are written by the next run."""
    monkeypatch.setattr(quote_cache.pending_list, "lock_seconds", 1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, partner_creds)}")
    table = Quote._meta.db_table
    made = [_quote(client, event_id=event.event_id)["quote_id"] for _ in range(3)]
    taken: list[int] = []

    def writer() -> None:
        try:
            taken.append(services.quotes_flush())
        finally:
            connections.close_all()

    def wait_for(waiting: int) -> None:
        for _ in range(200):
            if _waiting_on(table) >= waiting:
                return
            time.sleep(0.05)
        raise AssertionError(f"{waiting} writers never waited on {table}")

    holder = connections.create_connection("default")
    holder.set_autocommit(False)
    with holder.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")  # inserts wait, reads do not
    first = threading.Thread(target=writer)
    first.start()
    wait_for(1)  # the first run read the 3 and waits to insert them
    time.sleep(1.2)  # ... past its lock's expiry
    made += [_quote(client, event_id=event.event_id)["quote_id"] for _ in range(2)]
    second = threading.Thread(target=writer)
    second.start()
    wait_for(2)  # the second run took the lock again and read all 5
    made += [_quote(client, event_id=event.event_id)["quote_id"] for _ in range(2)]
    holder.commit()
    holder.close()
    first.join(timeout=30)
    second.join(timeout=30)
    assert sorted(taken) == [0, 5]  # the first outlived its lock: its 3 stay for the second, who wrote them
    assert len(quote_cache.quotes_pending()) == 2  # the two made while both were held back
    assert services.quotes_flush() == 2
    assert Quote.objects.count() == 7
    written = set(Quote.objects.values_list("pk", flat=True))
    assert {decode_quote_claims(quote_id).pk for quote_id in made} == written
