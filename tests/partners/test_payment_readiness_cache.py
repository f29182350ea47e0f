"""Payment readiness travels with the token session (partners.token_cache): quotes and orders check a cached
copy, which a change of a payout method or card voids at once, and which a copy made before the change can
never outlive, however late it is written."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partners import token_cache
from payouts.models import CreditCard, PayoutAccount
from tests.conftest import assert_error

pytestmark = pytest.mark.django_db


def _quote(client):
    # An unknown event: past the readiness check, the answer is EVENT_NOT_FOUND.
    return client.post(
        "/v1/quotes", {"event_id": "evt_none", "section_name": "A", "quantity": 1}, format="json"
    )


def _readiness_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if "payouts_" in q["sql"]]


def test_a_warm_session_checks_readiness_without_a_query(auth_client):
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")
    with CaptureQueriesContext(connection) as queries:
        assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")
    assert _readiness_queries(queries) == []


@pytest.mark.parametrize("model", [CreditCard, PayoutAccount])
def test_deleting_a_method_is_seen_by_the_next_request(auth_client, partner, model):
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")  # readiness cached as ready
    model.objects.filter(partner=partner).delete()
    error = assert_error(_quote(auth_client), 403, "PAYOUT_METHOD_NOT_CONFIGURED")
    assert error["details"]["missing"] == ["payout_method" if model is PayoutAccount else "credit_card"]


def test_adding_the_method_back_is_seen_by_the_next_request(auth_client, partner):
    card = CreditCard.objects.get(partner=partner)
    values = {
        f.attname: getattr(card, f.attname) for f in CreditCard._meta.concrete_fields if not f.primary_key
    }
    card.delete()
    assert_error(_quote(auth_client), 403, "PAYOUT_METHOD_NOT_CONFIGURED")  # cached as not ready
    CreditCard.objects.create(**values)
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")


def test_a_copy_read_before_a_change_is_never_believed_after_it(auth_client, partner):
    """The race: a request reads the database (ready), the card is deleted and the change voids the
    copies, then the slow request writes its copy. It carries the stamp it read before its query: stale."""
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")
    found = cache.get_many(
        [token_cache.READINESS_EPOCH_KEY, token_cache.readiness_version_key(partner.public_id)]
    )
    stamp_before = token_cache.readiness_stamp(found, partner.public_id)
    CreditCard.objects.filter(partner=partner).delete()  # voids: a new version
    # The slow request's late write of "ready", stamped as it read it before the change.
    cache.set(token_cache.readiness_cache_key(partner.public_id), (stamp_before, ()), 3600)
    assert_error(_quote(auth_client), 403, "PAYOUT_METHOD_NOT_CONFIGURED")


def test_a_failed_invalidation_is_repaired_when_the_cache_answers_again(auth_client, partner, monkeypatch):
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")

    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr(cache, "set", down)
    CreditCard.objects.filter(partner=partner).delete()  # the version cannot be replaced
    monkeypatch.undo()
    # This process saw the failure: its next request replaces the epoch before reading anything.
    assert_error(_quote(auth_client), 403, "PAYOUT_METHOD_NOT_CONFIGURED")


def test_a_change_whose_version_the_cache_lost_is_not_hidden_by_an_older_copy(auth_client, partner):
    """The partner's version expired (a day without a change), a copy is made, then the change's version is lost
    too (an eviction): the version read next is a fresh one, never the one the older copy was stamped with."""
    cache.delete(token_cache.readiness_version_key(partner.public_id))  # expired: no change for a day
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")  # cached as ready
    CreditCard.objects.filter(partner=partner).delete()  # voids: a new version
    cache.delete(token_cache.readiness_version_key(partner.public_id))
    assert_error(_quote(auth_client), 403, "PAYOUT_METHOD_NOT_CONFIGURED")


def _round_trip_reads(monkeypatch) -> list[list[str]]:
    """The entries each authentication's round trip reads (config.api.ratelimit._count's ``read``)."""
    from config.api import ratelimit

    seen: list[list[str]] = []
    count = ratelimit._count

    def recording(*args, **kwargs):
        seen.append(list(kwargs.get("read", ())))
        return count(*args, **kwargs)

    monkeypatch.setattr(ratelimit, "_count", recording)
    return seen


def test_a_catalog_read_leaves_readiness_out_of_its_round_trip(auth_client, partner, monkeypatch):
    readiness_keys = {
        token_cache.READINESS_EPOCH_KEY,
        token_cache.readiness_version_key(partner.public_id),
        token_cache.readiness_cache_key(partner.public_id),
    }
    seen = _round_trip_reads(monkeypatch)
    assert auth_client.get("/v1/events").status_code == 200
    assert_error(_quote(auth_client), 404, "EVENT_NOT_FOUND")
    events, quote = seen
    assert readiness_keys.isdisjoint(events)
    assert readiness_keys <= set(quote)


def test_a_catalog_read_neither_writes_readiness_nor_hides_a_change(auth_client, partner):
    # A cold session read from the database by a catalog read: no readiness copy is written for it...
    cache.clear()
    assert auth_client.get("/v1/events").status_code == 200
    assert cache.get(token_cache.readiness_cache_key(partner.public_id)) is None
    # ...and a partner without a card still reads the catalog, while its quote is refused.
    CreditCard.objects.filter(partner=partner).delete()
    assert auth_client.get("/v1/events").status_code == 200
    error = assert_error(_quote(auth_client), 403, "PAYOUT_METHOD_NOT_CONFIGURED")
    assert error["details"]["missing"] == ["credit_card"]
