"""Idempotency-Key on POST /v1/quotes, /v1/orders and /v1/orders/{id}/cancel, through HTTP
(docs/partners/idempotency.md "Retries and Idempotency-Key")."""

import json
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from orders.models import Order, OrderStatusHistory
from partners.idempotency.models import IdempotencyKey
from payouts.models import Charge
from quotes.models import Quote
from tests.conftest import assert_error
from tests.orders.conftest import create_order
from tests.quotes.factories import QuoteFactory, quote_token, quotes_written

from .conftest import REPLAYED, assert_replay_of, keyed, order_form, post_order_keyed

pytestmark = pytest.mark.django_db


def _quote_body(row, **overrides) -> dict:
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    body.update(overrides)
    return body


# --- replays --------------------------------------------------------------------------------------------


def test_replayed_order_returns_the_same_order_and_runs_nothing_twice(
    auth_client, quote, row, django_capture_on_commit_callbacks
):
    form = order_form(quote, seller_email="seller@example.org")
    with django_capture_on_commit_callbacks(execute=True):
        first = post_order_keyed(auth_client, form, "order-attempt-1")
    assert first.status_code == 201, first.content
    order = Order.objects.get(order_id=first.json()["data"]["order_id"])
    assert Charge.objects.filter(order=order).count() == 1
    assert len(mail.outbox) == 1
    history = OrderStatusHistory.objects.filter(order=order).count()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        replay = post_order_keyed(auth_client, form, "order-attempt-1")

    assert_replay_of(first, replay)
    assert replay.json()["data"]["order_id"] == order.order_id
    assert callbacks == []  # no confirmation published again
    assert Order.objects.filter(quote=quote).count() == 1
    assert Charge.objects.count() == 1
    assert len(mail.outbox) == 1
    assert OrderStatusHistory.objects.filter(order=order).count() == history
    row.refresh_from_db()
    assert row.available_quantity == 8  # taken once


def test_order_retry_without_a_key_still_meets_the_consumed_quote(auth_client, quote):
    assert post_order_keyed(auth_client, order_form(quote), "k-1").status_code == 201
    retry = auth_client.post("/v1/orders", order_form(quote), format="multipart")
    assert_error(retry, 422, "QUOTE_ALREADY_CONSUMED")
    assert retry.headers.get(REPLAYED) is None


def test_replayed_quote_returns_the_same_quote_id(auth_client, row):
    first = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("quote-1"))
    replay = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("quote-1"))

    assert first.status_code == 201, first.content
    assert_replay_of(first, replay)
    assert replay.json()["data"]["quote_id"] == first.json()["data"]["quote_id"]
    quotes_written()
    assert Quote.objects.count() == 1


def test_json_fingerprint_is_the_parsed_object_not_the_bytes(auth_client, row):
    body = _quote_body(row)
    first = auth_client.post("/v1/quotes", body, format="json", **keyed("quote-2"))
    # Other key order, other spacing: the same parsed object.
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=3)
    replay = auth_client.post("/v1/quotes", reordered, content_type="application/json", **keyed("quote-2"))
    assert_replay_of(first, replay)


def test_replayed_cancel_returns_the_same_200(auth_client, partner):
    order = create_order(partner)
    url = f"/v1/orders/{order.order_id}/cancel"
    first = auth_client.post(url, {"reason": "Seller changed plans"}, format="json", **keyed("cancel-1"))
    replay = auth_client.post(url, {"reason": "Seller changed plans"}, format="json", **keyed("cancel-1"))

    assert first.status_code == 200, first.content
    assert first.json()["data"]["status"] == "canceled"
    assert_replay_of(first, replay)
    assert OrderStatusHistory.objects.filter(order=order, to_status="canceled").count() == 1
    # Without the key the same cancel meets the state machine.
    again = auth_client.post(url, {"reason": "Seller changed plans"}, format="json")
    assert_error(again, 409, "ORDER_NOT_CANCELABLE")


def test_a_stored_422_is_replayed_even_after_the_cause_is_gone(auth_client, partner, row):
    quote = QuoteFactory(partner=partner, row=row, created_at=timezone.now() - timedelta(hours=1), quantity=2)
    quote.expires_at = timezone.now() - timedelta(minutes=1)
    quote.save(update_fields=["expires_at"])
    form = order_form(quote)
    first = post_order_keyed(auth_client, form, "expired-quote")
    assert_error(first, 422, "QUOTE_EXPIRED")

    quotes_written()
    Quote.objects.filter(pk=quote.pk).update(expires_at=timezone.now() + timedelta(minutes=10))
    replay = post_order_keyed(auth_client, form, "expired-quote")

    assert_replay_of(first, replay)
    assert_error(replay, 422, "QUOTE_EXPIRED")
    assert not Order.objects.filter(quote=quote).exists()


def test_a_stored_404_is_replayed(auth_client):
    first = auth_client.post("/v1/orders/ord_unknown/cancel", {}, format="json", **keyed("nf"))
    replay = auth_client.post("/v1/orders/ord_unknown/cancel", {}, format="json", **keyed("nf"))
    assert_error(first, 404, "ORDER_NOT_FOUND")
    assert_replay_of(first, replay)


# --- what is not stored ---------------------------------------------------------------------------------


def test_a_first_400_is_not_stored_and_the_corrected_retry_runs(auth_client, quote):
    broken = order_form(quote, delivery_type="carrier_pigeon")
    first = post_order_keyed(auth_client, broken, "fix-me")
    assert_error(first, 400, "VALIDATION_ERROR")
    assert not IdempotencyKey.objects.exists()  # the key is free again

    corrected = post_order_keyed(auth_client, order_form(quote), "fix-me")

    assert corrected.status_code == 201, corrected.content
    assert corrected.headers.get(REPLAYED) is None
    assert Order.objects.filter(quote=quote).count() == 1


def test_a_401_never_touches_the_key(api_client, auth_client, row):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    refused = api_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("auth-first"))
    assert_error(refused, 401, "UNAUTHORIZED")
    assert not IdempotencyKey.objects.exists()
    ok = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("auth-first"))
    assert ok.status_code == 201 and ok.headers.get(REPLAYED) is None


def test_a_429_is_not_stored(auth_client, row, settings):
    settings.RATE_LIMIT_PER_MINUTE = 1
    auth_client.get("/v1/events")  # spends the minute's only request
    limited = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("rate"))
    assert_error(limited, 429, "RATE_LIMIT_EXCEEDED")
    assert not IdempotencyKey.objects.exists()


def test_a_5xx_is_not_stored_and_the_retry_runs(auth_client, row, monkeypatch):
    from quotes import services

    real = services.quote_create
    monkeypatch.setattr(
        services, "quote_create", lambda **kw: (_ for _ in ()).throw(RuntimeError("db hiccup"))
    )
    failed = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("flaky"))
    assert_error(failed, 500, "INTERNAL_ERROR")
    assert not IdempotencyKey.objects.exists()

    monkeypatch.setattr(services, "quote_create", real)
    retry = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("flaky"))
    assert retry.status_code == 201 and retry.headers.get(REPLAYED) is None


def test_a_permission_403_comes_before_the_key_and_is_not_stored(partner, row):
    from tests.orders.conftest import narrow_token_client

    client = narrow_token_client(partner, "events:read")
    refused = client.post("/v1/quotes", _quote_body(row), format="json", **keyed("scope"))
    assert_error(refused, 403, "FORBIDDEN")
    assert not IdempotencyKey.objects.exists()


# --- mismatch and in flight -----------------------------------------------------------------------------


def test_same_key_with_another_body_is_a_mismatch(auth_client, row):
    assert auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("k")).status_code == 201
    other = auth_client.post("/v1/quotes", _quote_body(row, quantity=3), format="json", **keyed("k"))
    error = assert_error(other, 422, "IDEMPOTENCY_KEY_MISMATCH")
    assert error["details"] == {"idempotency_key": "k"}
    quotes_written()
    assert Quote.objects.count() == 1


def test_same_key_on_another_path_is_a_mismatch(auth_client, partner, row):
    order = create_order(partner)
    assert auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("k")).status_code == 201
    other = auth_client.post(f"/v1/orders/{order.order_id}/cancel", {}, format="json", **keyed("k"))
    assert_error(other, 422, "IDEMPOTENCY_KEY_MISMATCH")
    order.refresh_from_db()
    assert order.status == "accepted"


def _in_flight(partner, *, key: str, fingerprint: str = "0" * 64, lease_seconds: int = 60):
    now = timezone.now()
    return IdempotencyKey.objects.create(
        partner=partner,
        livemode=True,
        key=key,
        fingerprint=fingerprint,
        method="POST",
        path="/v1/quotes",
        claim_token="held-by-another-request",
        created_at=now,
        locked_until=now + timedelta(seconds=lease_seconds),
    )


def _fingerprint_of_quote_request(auth_client, row, partner) -> str:
    """The fingerprint the API computes for this quote body (read back from a finished first request)."""
    auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("probe"))
    record = IdempotencyKey.objects.get(key="probe")
    record.delete()
    quotes_written()
    Quote.objects.all().delete()
    return record.fingerprint


def test_same_request_while_the_first_runs_is_409_with_retry_after(auth_client, partner, row):
    _in_flight(partner, key="busy", fingerprint=_fingerprint_of_quote_request(auth_client, row, partner))
    busy = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("busy"))
    assert_error(busy, 409, "IDEMPOTENCY_KEY_IN_USE")
    assert busy.headers["Retry-After"] == "1"
    quotes_written()
    assert not Quote.objects.exists()


def test_another_request_while_the_first_runs_is_a_mismatch_not_a_409(auth_client, partner, row):
    _in_flight(partner, key="busy", fingerprint=_fingerprint_of_quote_request(auth_client, row, partner))
    other = auth_client.post("/v1/quotes", _quote_body(row, quantity=5), format="json", **keyed("busy"))
    assert_error(other, 422, "IDEMPOTENCY_KEY_MISMATCH")


def test_a_key_whose_request_died_is_claimed_again_after_the_lease(auth_client, partner, row, settings):
    settings.IDEMPOTENCY_LEASE_SECONDS = 60
    _in_flight(partner, key="died", fingerprint=_fingerprint_of_quote_request(auth_client, row, partner))
    assert auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("died")).status_code == 409

    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        retry = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("died"))
        again = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("died"))

    assert retry.status_code == 201, retry.content
    assert retry.headers.get(REPLAYED) is None
    assert_replay_of(retry, again)
    quotes_written()
    assert Quote.objects.count() == 1


# --- scope and retention --------------------------------------------------------------------------------


def test_keys_of_two_partners_do_not_collide(auth_client, other_auth_client, row):
    mine = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("shared-key"))
    theirs = other_auth_client.post(
        "/v1/quotes", _quote_body(row, quantity=4), format="json", **keyed("shared-key")
    )
    assert mine.status_code == 201 and theirs.status_code == 201, theirs.content
    assert theirs.headers.get(REPLAYED) is None
    assert theirs.json()["data"]["quote_id"] != mine.json()["data"]["quote_id"]
    assert IdempotencyKey.objects.filter(key="shared-key").count() == 2


def test_a_key_older_than_24_hours_runs_again(auth_client, row):
    with time_machine.travel(timezone.now() - timedelta(hours=24, seconds=1)):
        first = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("yesterday"))
    assert first.status_code == 201
    # Even with another body: the old record no longer names a request.
    fresh = auth_client.post("/v1/quotes", _quote_body(row, quantity=3), format="json", **keyed("yesterday"))

    assert fresh.status_code == 201, fresh.content
    assert fresh.headers.get(REPLAYED) is None
    assert fresh.json()["data"]["quote_id"] != first.json()["data"]["quote_id"]
    quotes_written()
    assert Quote.objects.count() == 2
    replay = auth_client.post("/v1/quotes", _quote_body(row, quantity=3), format="json", **keyed("yesterday"))
    assert_replay_of(fresh, replay)


def test_a_key_just_under_24_hours_old_still_replays(auth_client, row):
    with time_machine.travel(timezone.now() - timedelta(hours=23, minutes=59)):
        first = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("today"))
    replay = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("today"))
    assert_replay_of(first, replay)


# --- the header itself ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "issue"),
    [
        ("", "invalid"),
        ('""', "invalid"),
        ("k" * 256, "too_long"),
        ("tab\there", "invalid"),
        ("caf\u00e9", "invalid"),
        ("bell\x07", "invalid"),
    ],
)
def test_a_malformed_key_is_400_on_the_idempotency_key_field(auth_client, row, raw, issue):
    response = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed(raw))
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"] == {"field": "Idempotency-Key", "issue": issue}
    quotes_written()
    assert not Quote.objects.exists()


def test_a_key_of_255_characters_is_accepted(auth_client, row):
    response = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("k" * 255))
    assert response.status_code == 201, response.content


def test_a_structured_field_string_is_the_same_key_unquoted(auth_client, row):
    first = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("abc-123"))
    quoted = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed('"abc-123"'))
    assert_replay_of(first, quoted)
    escaped = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed('"say \\"hi\\""'))
    assert escaped.status_code == 201
    assert IdempotencyKey.objects.filter(key='say "hi"').exists()


def test_the_key_is_ignored_on_get(auth_client, row):
    first = auth_client.get("/v1/events", **keyed("get-key"))
    second = auth_client.get("/v1/events", **keyed(""))  # not even validated
    assert first.status_code == 200 and second.status_code == 200
    assert second.headers.get(REPLAYED) is None
    assert not IdempotencyKey.objects.exists()


def test_the_key_is_ignored_on_the_token_endpoint(partner_creds):
    client = APIClient()
    body = {
        "client_id": partner_creds.client_id,
        "client_secret": partner_creds.client_secret,
        "grant_type": "client_credentials",
    }
    first = client.post("/v1/auth/token", body, format="json", **keyed("token-key"))
    second = client.post("/v1/auth/token", body, format="json", **keyed("token-key"))
    malformed = client.post("/v1/auth/token", body, format="json", **keyed(""))
    assert first.status_code == second.status_code == malformed.status_code == 200
    assert second.headers.get(REPLAYED) is None
    assert first.json()["data"]["access_token"] != second.json()["data"]["access_token"]
    assert not IdempotencyKey.objects.exists()


def test_the_key_is_scoped_to_the_mode(auth_client, partner, row):
    """A test-mode record with the same key does not answer a live request (modes never share keys)."""
    IdempotencyKey.objects.create(
        partner=partner,
        livemode=False,
        key="mode-key",
        fingerprint="f" * 64,
        method="POST",
        path="/v1/quotes",
        claim_token="test-mode",
        created_at=timezone.now(),
        response_status=201,
        response_body={"data": {"quote_id": "from-test-mode"}},
    )
    live = auth_client.post("/v1/quotes", _quote_body(row), format="json", **keyed("mode-key"))
    assert live.status_code == 201 and live.headers.get(REPLAYED) is None
    assert live.json()["data"]["quote_id"] != "from-test-mode"


def test_a_request_without_a_key_stores_nothing(auth_client, quote):
    assert auth_client.post("/v1/orders", order_form(quote), format="multipart").status_code == 201
    assert not IdempotencyKey.objects.exists()


def test_quote_token_of_a_replayed_order_is_the_one_sent(auth_client, quote):
    token = quote_token(quote)
    first = post_order_keyed(auth_client, order_form(quote, quote_id=token), "qt")
    replay = post_order_keyed(auth_client, order_form(quote, quote_id=token), "qt")
    assert (
        replay.json()["data"]["quotes"][0]["quote_id"]
        == token
        == first.json()["data"]["quotes"][0]["quote_id"]
    )
