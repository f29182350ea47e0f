"""A warm quote is made before its round trip and stored in it (quotes.api._Ahead, config.api.ratelimit.WriteIf):
one round trip to Redis, whose script stores the quote only while the token's session, the partner's payment
readiness and the catalog's versions hold the bytes of the earlier answered quote, and the request is within
its budget. Whatever refuses the request, or changes what it would choose, leaves nothing stored by it."""

import threading

import pytest
from django.core.cache import cache
from django.db import connections
from redis.exceptions import ResponseError
from rest_framework.test import APIClient

from catalog import cache as catalog_cache
from catalog.models import Row
from catalog.services.quantities import row_quantity_take
from config.api import ratelimit
from partners.services import partner_suspend, sessions_revoke
from payouts.models import CreditCard
from quotes import api as quotes_api
from quotes import quote_cache, services
from quotes.codec import decode_quote_id
from quotes.models import Quote
from tests.conftest import assert_error, issue_token

pytestmark = pytest.mark.django_db

SELLER = {"first_name": "Ada", "last_name": "Quill", "email": "ada@seller.example"}


@pytest.fixture(autouse=True)
def held(settings):
    """The production defaults: rows held per process, and a process that remembers nothing yet."""
    settings.CATALOG_CACHE_SECONDS = 5
    settings.CATALOG_LOCAL_CACHE_SECONDS = 5
    catalog_cache.local.clear()
    quotes_api._accepted.clear()
    quotes_api._versions.clear()
    yield
    catalog_cache.local.clear()
    quotes_api._accepted.clear()
    quotes_api._versions.clear()


@pytest.fixture
def round_trips(monkeypatch) -> list[list[str]]:
    """The commands of every round trip to Redis the quote path makes (config.api.ratelimit.pipelined)."""
    sent: list[list[str]] = []
    real = ratelimit.pipelined

    def recording(client, commands):
        sent.append([str(command[0]) for command in commands])
        return real(client, commands)

    monkeypatch.setattr(ratelimit, "pipelined", recording)
    monkeypatch.setattr(quote_cache, "pipelined", recording)
    return sent


def quote(client, event, **overrides):
    body = {
        "event_id": event.event_id,
        "section_name": "Lower 101",
        "row_name": "B",
        "quantity": 2,
        "user_metadata": SELLER,
    }
    body.update(overrides)
    return client.post("/v1/quotes", {k: v for k, v in body.items() if v is not ...}, format="json")


def made(response) -> dict:
    assert response.status_code == 201, response.content
    return response.json()["data"]


def pending_pks() -> list[int]:
    return [q.pk for q in quote_cache.quotes_pending()]


def test_a_warm_quote_is_stored_in_its_one_round_trip(auth_client, event, round_trips):
    # Cold, then with the session's state read from the database: authenticated, then stored.
    warm(auth_client, event)
    assert [trip[0] for trip in round_trips] == ["MGET", "SET"] * 2
    cache._cache.get_client(write=True).script_load(ratelimit._COUNT_AND_WRITE)  # as after the first
    round_trips.clear()
    data = made(quote(auth_client, event, row_name=..., quantity=10))
    assert len(round_trips) == 1 and round_trips[0][0] in ("EVALSHA", "EVAL"), round_trips
    pk = decode_quote_id(data["quote_id"])
    assert pending_pks()[-1] == pk
    kept = quote_cache.quote_copy(pk)
    assert kept.user_metadata == SELLER and kept.row_name == "B" and kept.quantity == 10
    # The answer and the stored quote agree, and the batched writer writes it as any other.
    services.quotes_flush()
    written = Quote.objects.get(pk=pk)
    assert (str(written.offer_price), written.quantity, written.expires_at.isoformat()[:19]) == (
        "120.50",
        10,
        data["expires_at"][:19],
    )
    detail = auth_client.get(f"/v1/quotes/{data['quote_id']}").json()["data"]
    assert (detail["status"], detail["quantity"], detail["row_name"]) == ("active", 10, "B")


def test_the_script_is_loaded_again_after_redis_forgot_it(auth_client, event, round_trips, monkeypatch):
    made(quote(auth_client, event))
    made(quote(auth_client, event))
    # A digest Redis does not hold: what EVALSHA meets after a restart or SCRIPT FLUSH, without flushing the
    # scripts of every other process on this Redis.
    monkeypatch.setattr(ratelimit, "_COUNT_AND_WRITE_SHA", "0" * 40)
    round_trips.clear()
    data = made(quote(auth_client, event))
    assert [trip[0] for trip in round_trips] == ["EVALSHA", "EVAL"]
    assert pending_pks().count(decode_quote_id(data["quote_id"])) == 1


def warm(client, event) -> int:
    """Two quotes answered: the process remembers the session's bytes. Returns the pending list's length."""
    made(quote(client, event))
    made(quote(client, event))
    return len(pending_pks())


def test_a_revoked_token_stores_nothing(auth_client, partner, event):
    before = warm(auth_client, event)
    sessions_revoke(partner=partner, reason="rotated", livemode=True)
    assert_error(quote(auth_client, event), 401, "UNAUTHORIZED")
    assert len(pending_pks()) == before


def test_a_suspended_partner_stores_nothing(auth_client, partner, event):
    before = warm(auth_client, event)
    partner_suspend(partner=partner, reason="review")
    assert_error(quote(auth_client, event), 403, "ACCOUNT_SUSPENDED")
    assert len(pending_pks()) == before


def test_a_card_deleted_stores_nothing(auth_client, partner, event):
    before = warm(auth_client, event)
    CreditCard.objects.filter(partner=partner).delete()
    assert_error(quote(auth_client, event), 403, "PAYOUT_METHOD_NOT_CONFIGURED")
    assert len(pending_pks()) == before


def test_a_request_past_the_budget_stores_nothing(auth_client, event, settings):
    before = warm(auth_client, event)
    settings.RATE_LIMIT_PER_MINUTE = 2  # the two quotes above spent it
    assert_error(quote(auth_client, event), 429, "RATE_LIMIT_EXCEEDED")
    assert len(pending_pks()) == before


def test_an_invalid_body_stores_nothing(auth_client, event):
    before = warm(auth_client, event)
    assert_error(quote(auth_client, event, quantity=0), 400, "VALIDATION_ERROR")
    assert_error(quote(auth_client, event, row_name="Z"), 404, "ROW_NOT_FOUND")
    assert_error(quote(auth_client, event, quantity=17), 422, "INSUFFICIENT_QUANTITY")
    assert len(pending_pks()) == before


def test_an_order_between_two_quotes_is_in_the_second(
    auth_client, event, round_trips, django_capture_on_commit_callbacks
):
    warm(auth_client, event)
    row = Row.objects.get(section__event=event, section__name="Lower 101", name="B")
    with django_capture_on_commit_callbacks(execute=True):
        assert row_quantity_take(row_pk=row.pk, quantity=10, event_id=event.event_id)
    round_trips.clear()
    # The script finds another version of the event's availability: it writes nothing, and the quote made
    # after the round trip is chosen on the new figures (16 - 10 = 6 left in B, so A is the best for 7).
    data = made(quote(auth_client, event, row_name=..., quantity=7))
    assert data["row_name"] == "A"
    assert [trip[0] for trip in round_trips][-1] == "SET", round_trips
    assert_error(quote(auth_client, event, quantity=7), 422, "INSUFFICIENT_QUANTITY")
    assert pending_pks()[-1] == decode_quote_id(data["quote_id"])


def test_a_quote_while_redis_does_not_answer_is_written_to_the_database(auth_client, event, monkeypatch):
    warm(auth_client, event)

    def down(client, commands):
        raise ConnectionError("redis down")

    monkeypatch.setattr(ratelimit, "pipelined", down)
    monkeypatch.setattr(quote_cache, "pipelined", down)
    data = made(quote(auth_client, event))
    assert Quote.objects.get(pk=decode_quote_id(data["quote_id"])).user_metadata == SELLER


@pytest.mark.django_db(transaction=True)
def test_quotes_racing_a_revocation_store_exactly_the_quotes_answered(partner_creds, partner, event, held):
    """Eight threads quote with a warm token until the partner's sessions, revoked meanwhile, refuse them: every
    quote answered 201 is stored once, and no refused request left one."""
    client = APIClient()
    token = issue_token(client, partner_creds)
    barrier = threading.Barrier(9)
    answered: list[int] = []
    refused: list[int] = []
    revoked: list = []
    lock = threading.Lock()

    def quoting() -> None:
        mine = APIClient()
        mine.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            first = [decode_quote_id(made(quote(mine, event))["quote_id"]) for _ in range(2)]
            with lock:
                answered.extend(first)
            barrier.wait(timeout=30)
            for _ in range(2000):  # until the revocation is seen
                response = quote(mine, event)
                with lock:
                    if response.status_code != 201:
                        assert response.status_code == 401, response.content
                        refused.append(response.status_code)
                        break
                    answered.append(decode_quote_id(response.json()["data"]["quote_id"]))
        finally:
            connections.close_all()

    def revoking() -> None:
        try:
            barrier.wait(timeout=30)
            revoked.append(sessions_revoke(partner=partner, reason="rotated", livemode=True))
        except BaseException as exc:
            revoked.append(exc)
            raise
        finally:
            connections.close_all()

    threads = [threading.Thread(target=quoting) for _ in range(8)] + [threading.Thread(target=revoking)]
    before = len(pending_pks())
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert revoked == [1], revoked
    assert len(refused) == 8, "a thread never saw the revocation"
    stored = pending_pks()[before:]
    assert sorted(stored) == sorted(answered)
    assert len(answered) > 8 * 2, "no quote raced the revocation"


def test_a_redis_that_refuses_the_script_counts_and_stores_as_before(auth_client, event, monkeypatch):
    warm(auth_client, event)

    def refused(*args, **kwargs):
        raise ResponseError("NOPERM this user has no permissions to run the 'evalsha' command")

    tried = []
    monkeypatch.setattr(ratelimit, "_count_and_write", lambda *a, **k: tried.append(1) or refused())
    monkeypatch.setattr(ratelimit._script_refused, "until", 0.0)
    first, second = quote(auth_client, event), quote(auth_client, event)
    assert tried == [1]  # not tried again for SCRIPT_REFUSED_SECONDS
    remaining = [int(r["RateLimit-Remaining"]) for r in (first, second)]
    assert remaining[0] - remaining[1] == 1  # each request counted once
    pks = [decode_quote_id(made(r)["quote_id"]) for r in (first, second)]
    assert pending_pks()[-2:] == pks


def test_a_quote_that_cannot_be_made_ahead_is_made_after_the_round_trip(auth_client, event, monkeypatch):
    warm(auth_client, event)

    def broken(**kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(services, "quote_ahead", broken)
    pk = decode_quote_id(made(quote(auth_client, event))["quote_id"])
    assert pending_pks()[-1] == pk


def test_a_refusal_after_the_script_stored_is_reported_and_the_quote_left_unused(
    auth_client, event, monkeypatch, caplog
):
    """Not reachable on the same bytes; forced here (a payment check that changed its mind after the round
    trip): the request is refused as the check says, and the stored quote is named in an error log line."""
    before = warm(auth_client, event)

    def changed_its_mind(principal):
        raise quotes_api.errors.PayoutMethodNotConfigured(details={"partner_id": "x", "missing": ["card"]})

    monkeypatch.setattr(quotes_api, "payout_check", changed_its_mind)
    assert_error(quote(auth_client, event), 403, "PAYOUT_METHOD_NOT_CONFIGURED")
    stored = pending_pks()[before:]
    assert len(stored) == 1
    assert any(str(stored[0]) in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)
