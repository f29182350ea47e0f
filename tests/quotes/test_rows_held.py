"""A quote chooses its row among the section's rows the web process holds under the catalog's and the event's
versions (catalog.cache.held, catalog.queries.row_quoted), read in the request's one round trip: a warm quote
makes no statement at all, and every change an answered write made is in the next quote, as in the next
catalog read."""

from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from catalog import cache as catalog_cache
from catalog.models import Event, Row
from catalog.queries import row_best, row_quoted, section_rows
from catalog.services import event_transition
from catalog.services.quantities import row_quantity_take
from config.api import ratelimit
from tests.catalog.factories import RowFactory
from tests.conftest import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(settings):
    """The production default: rows kept in the process while their versions are current."""
    settings.CATALOG_CACHE_SECONDS = 5
    settings.CATALOG_LOCAL_CACHE_SECONDS = 5
    catalog_cache.local.clear()
    yield
    catalog_cache.local.clear()


def quote(client, event, **overrides):
    body = {"event_id": event.event_id, "section_name": "Lower 101", "row_name": "B", "quantity": 2}
    body.update(overrides)
    return client.post("/v1/quotes", {k: v for k, v in body.items() if v is not ...}, format="json")


def data(response) -> dict:
    assert response.status_code == 201, response.content
    return response.json()["data"]


def test_a_warm_quote_makes_no_statement(auth_client, event, held, django_assert_num_queries):
    data(quote(auth_client, event, section_name="Floor GA", row_name="GA"))  # the token's first use
    with django_assert_num_queries(1):  # the section's rows
        data(quote(auth_client, event))
    with django_assert_num_queries(0):
        assert data(quote(auth_client, event, row_name="A"))["offer_price"] == 142.25
    with django_assert_num_queries(0):
        assert data(quote(auth_client, event, row_name=..., quantity=10))["row_name"] == "B"


def test_the_versions_come_in_the_authenticating_round_trip(auth_client, event, held, monkeypatch):
    sent = []
    count = ratelimit._count

    def recording(*args, **kwargs):
        sent.append(kwargs["read"])
        return count(*args, **kwargs)

    monkeypatch.setattr(ratelimit, "_count", recording)
    data(quote(auth_client, event))
    assert len(sent) == 1
    keys = [str(k) for k in sent[0]]
    for key in catalog_cache.stamp_keys(event.event_id):
        assert any(k.endswith(key) for k in keys), (key, keys)


def test_an_order_taken_is_in_the_next_quote(auth_client, event, held, django_capture_on_commit_callbacks):
    assert data(quote(auth_client, event, row_name="A"))["quantity"] == 2
    row = Row.objects.get(section__event=event, section__name="Lower 101", name="A")
    with django_capture_on_commit_callbacks(execute=True):
        assert row_quantity_take(row_pk=row.pk, quantity=7, event_id=event.event_id)
    response = quote(auth_client, event, row_name="A")
    assert_error(response, 422, "INSUFFICIENT_QUANTITY")
    assert response.json()["error"]["details"] == {"requested": 2, "available": 1}
    # The best row now skips A for two tickets.
    assert data(quote(auth_client, event, row_name=...))["row_name"] == "B"


def test_a_staff_edit_is_in_the_next_quote(auth_client, event, held, django_capture_on_commit_callbacks):
    assert data(quote(auth_client, event))["offer_price"] == 120.5
    row = Row.objects.get(section__event=event, section__name="Lower 101", name="B")
    with django_capture_on_commit_callbacks(execute=True):
        row.offer_price = Decimal("150.00")
        row.name_display = "Row B (aisle)"
        row.save()
    fresh = data(quote(auth_client, event))
    assert (fresh["offer_price"], fresh["row_name_display"]) == (150.0, "Row B (aisle)")
    # And now B is the best row.
    assert data(quote(auth_client, event, row_name=...))["row_name"] == "B"
    with django_capture_on_commit_callbacks(execute=True):
        row.delete()
    assert_error(quote(auth_client, event), 404, "ROW_NOT_FOUND")
    with django_capture_on_commit_callbacks(execute=True):
        RowFactory(section=row.section, name="D", offer_price="80.00", available_quantity=4)
    assert data(quote(auth_client, event, row_name="D"))["offer_price"] == 80.0


def test_a_canceled_or_started_event_is_expired_at_once(
    auth_client, event, held, django_capture_on_commit_callbacks
):
    soon = timezone.now() + timedelta(minutes=20)
    Event.objects.filter(pk=event.pk).update(starts_at=soon)
    data(quote(auth_client, event))
    with time_machine.travel(soon + timedelta(seconds=1)):
        response = quote(auth_client, event)
    assert_error(response, 422, "EVENT_EXPIRED")
    assert response.json()["error"]["details"]["reason"] == "started"
    Event.objects.filter(pk=event.pk).update(starts_at=timezone.now() + timedelta(days=3))
    catalog_cache.bump_version()  # the update above bypassed the models' signals
    data(quote(auth_client, event))
    with django_capture_on_commit_callbacks(execute=True):
        event_transition(event=Event.objects.get(pk=event.pk), to=Event.Status.CANCELED, actor="staff")
    response = quote(auth_client, event)
    assert_error(response, 422, "EVENT_EXPIRED")
    assert response.json()["error"]["details"]["reason"] == "canceled"


def test_a_lost_version_is_replaced_and_the_rows_read_again(
    auth_client, event, held, django_assert_num_queries
):
    data(quote(auth_client, event))
    cache.delete(catalog_cache.event_version_key(event.event_id))
    with django_assert_num_queries(1):
        data(quote(auth_client, event))
    with django_assert_num_queries(0):
        data(quote(auth_client, event))


def test_the_held_rows_choose_what_the_databases_query_chooses(event, held):
    section = event.sections.get(name="Lower 101")
    RowFactory(section=section, name="AA", offer_price="142.25", available_quantity=3)
    RowFactory(section=section, name="0", offer_price="142.25", available_quantity=12)
    found = cache.get_many(catalog_cache.stamp_keys(event.event_id))
    rows = section_rows(event_id=event.event_id, section_name="Lower 101")
    assert [r.row_name for r in rows] == ["0", "A", "AA", "B", "C"]
    for quantity in (1, 3, 4, 9, 12, 13, 17, 30, 31):
        expected = row_best(event_id=event.event_id, section_name="Lower 101", quantity=quantity)
        chosen = row_quoted(
            event_id=event.event_id, section_name="Lower 101", row_name=None, quantity=quantity, found=found
        )
        assert chosen == expected, quantity


def test_without_the_cache_the_quote_reads_the_database(auth_client, event, held, django_assert_num_queries):
    # No versions read (the round trip failed): nothing is held, each quote reads its row.
    found = None
    for _ in range(2):
        assert row_quoted(
            event_id=event.event_id, section_name="Lower 101", row_name="B", quantity=1, found=found
        ).offer_price == Decimal("120.50")
    assert catalog_cache.local.entries == {}


def test_a_body_that_does_not_parse_is_refused_after_the_token(auth_client, event):
    bad = b'{"event_id": "' + event.event_id.encode() + b'", '
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    response = stranger.post("/v1/quotes", bad, content_type="application/json")
    assert_error(response, 401, "UNAUTHORIZED")
    response = auth_client.post("/v1/quotes", bad, content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR")


def test_rows_in_use_are_kept_and_read_again_at_the_latest_after_the_cap(
    auth_client, event, held, monkeypatch, django_assert_num_queries
):
    # The process's clock, moved by hand: the held rows' time is counted on it alone.
    now = [1_000.0]
    monkeypatch.setattr(catalog_cache, "_clock", lambda: now[0])
    data(quote(auth_client, event, section_name="Floor GA", row_name="GA"))  # the token's first use
    with django_assert_num_queries(1):
        data(quote(auth_client, event))
    # Quoted every 4 s, within CATALOG_LOCAL_CACHE_SECONDS of the last use: kept, past 5 s since the read.
    for _ in range(3):
        now[0] += 4
        with django_assert_num_queries(0):
            data(quote(auth_client, event))
    # Unused for longer than CATALOG_LOCAL_CACHE_SECONDS: let go, read again.
    now[0] += 6
    with django_assert_num_queries(1):
        data(quote(auth_client, event))
    # However often it is quoted, it is read again HELD_MAX_SECONDS after its read.
    built = now[0]
    while now[0] + 4 < built + catalog_cache.HELD_MAX_SECONDS:
        now[0] += 4
        with django_assert_num_queries(0):
            data(quote(auth_client, event))
    now[0] = built + catalog_cache.HELD_MAX_SECONDS
    with django_assert_num_queries(1):
        data(quote(auth_client, event))
    with django_assert_num_queries(0):
        data(quote(auth_client, event))
