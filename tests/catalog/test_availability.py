"""docs/partners/catalog-and-quotes.md "Catalog › Availability and freshness": the rows and sections pages show every committed order,
cancel and expiry on the very next read, in every web process, while unchanged events stay cached."""

from unittest import mock

import pytest

from catalog import cache as catalog_cache
from catalog.models import Row
from config.api import ratelimit
from orders.models import Order
from orders.services import order_transition

pytestmark = pytest.mark.django_db

ORDER_FORM = {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}


@pytest.fixture
def local_tier(settings):
    """The production default: pages kept 5 s in the shared cache and 1 s inside the process."""
    settings.CATALOG_CACHE_SECONDS = 5
    settings.CATALOG_LOCAL_CACHE_SECONDS = 1
    catalog_cache.local.clear()
    yield
    catalog_cache.local.clear()


def rows_of(client, event, section="Lower%20101") -> dict[str, int]:
    response = client.get(f"/v1/events/{event.event_id}/sections/{section}/rows")
    assert response.status_code == 200, response.content
    return {r["row_name"]: r["available_quantity"] for r in response.json()["data"]["results"]}


def sections_of(client, event) -> dict[str, int]:
    response = client.get(f"/v1/events/{event.event_id}/sections")
    assert response.status_code == 200, response.content
    return {s["section_name"]: s["available_quantity"] for s in response.json()["data"]["results"]}


def order(client, event, *, row="A", quantity=2) -> dict:
    body = {"event_id": event.event_id, "section_name": "Lower 101", "row_name": row, "quantity": quantity}
    quote = client.post("/v1/quotes", body, format="json")
    assert quote.status_code == 201, quote.content
    response = client.post("/v1/orders", {"quote_id": quote.json()["data"]["quote_id"], **ORDER_FORM})
    assert response.status_code == 201, response.content
    return response.json()["data"]


def test_rows_and_sections_show_an_order_a_cancel_and_an_expiry_at_once(
    auth_client, event, local_tier, django_capture_on_commit_callbacks
):
    assert rows_of(auth_client, event) == {"A": 8, "B": 16}
    assert sections_of(auth_client, event)["Lower 101"] == 24

    with django_capture_on_commit_callbacks(execute=True):
        first = order(auth_client, event, quantity=2)
    assert rows_of(auth_client, event) == {"A": 6, "B": 16}
    assert sections_of(auth_client, event)["Lower 101"] == 22

    with django_capture_on_commit_callbacks(execute=True):
        canceled = auth_client.post(f"/v1/orders/{first['order_id']}/cancel")
    assert canceled.status_code == 200, canceled.content
    assert rows_of(auth_client, event) == {"A": 8, "B": 16}
    assert sections_of(auth_client, event)["Lower 101"] == 24

    with django_capture_on_commit_callbacks(execute=True):
        second = order(auth_client, event, row="B", quantity=3)
    assert rows_of(auth_client, event) == {"A": 8, "B": 13}
    with django_capture_on_commit_callbacks(execute=True):
        order_transition(
            order=Order.objects.get(order_id=second["order_id"]), to=Order.Status.EXPIRED, actor="system"
        )
    assert Order.objects.get(order_id=second["order_id"]).status == Order.Status.EXPIRED
    assert rows_of(auth_client, event) == {"A": 8, "B": 16}
    assert sections_of(auth_client, event)["Lower 101"] == 24


def test_an_unchanged_event_is_still_served_from_the_cache(
    auth_client, event, local_tier, django_assert_num_queries, django_capture_on_commit_callbacks
):
    from tests.catalog.factories import EventFactory, RowFactory, SectionFactory

    other = EventFactory(name="Other Show")
    RowFactory(section=SectionFactory(event=other, name="Lower 101"), name="A", available_quantity=5)
    assert rows_of(auth_client, event) == {"A": 8, "B": 16}
    assert sections_of(auth_client, event)["Lower 101"] == 24
    with django_capture_on_commit_callbacks(execute=True):
        order(auth_client, other, quantity=1)

    # An order on another event leaves this event's pages current: no catalog query, one round trip.
    catalog_cache.local.clear()  # the shared tier alone (another process's view)
    with django_assert_num_queries(0):
        assert rows_of(auth_client, event) == {"A": 8, "B": 16}
        assert sections_of(auth_client, event)["Lower 101"] == 24
    with (
        django_assert_num_queries(0),
        mock.patch.object(catalog_cache.cache, "get_many", wraps=catalog_cache.cache.get_many) as trips,
    ):
        assert rows_of(auth_client, event) == {"A": 8, "B": 16}  # the local tier
    # The versions came with authentication's round trip (session state, rate count): none of its own.
    assert trips.call_count == 0
    # The event that changed is rebuilt from the database.
    with django_assert_num_queries(1):
        assert rows_of(auth_client, other) == {"A": 4}


def test_event_pages_keep_their_local_hits_without_a_round_trip(auth_client, event, local_tier):
    auth_client.get("/v1/events")
    with mock.patch.object(catalog_cache.cache, "get_many", side_effect=AssertionError("round trip")):
        assert auth_client.get("/v1/events").status_code == 200


def test_rows_read_from_the_database_when_the_cache_is_down(auth_client, event, local_tier):
    assert rows_of(auth_client, event) == {"A": 8, "B": 16}
    Row.objects.filter(section__event=event, name="A").update(available_quantity=3)
    # Without the versions, not even this process's copy is trusted.
    with (
        mock.patch.object(catalog_cache.cache, "get_many", side_effect=ConnectionError("redis down")),
        mock.patch.object(catalog_cache.cache, "set", side_effect=ConnectionError("redis down")),
        # Authentication's pipelined round trip (which also reads the versions) fails the same way.
        mock.patch.object(ratelimit, "_count", side_effect=ConnectionError("redis down")),
    ):
        assert rows_of(auth_client, event) == {"A": 3, "B": 16}


def test_a_page_built_before_a_change_committed_is_not_served_after_it(event, local_tier):
    """The stamp is read before the build: a page that missed a change is stored under an old stamp."""
    key = catalog_cache.entry_key("test", event.event_id)
    built = []

    def build(value: bytes):
        def run() -> bytes:
            built.append(value)
            if value == b"old":  # the change commits while this page is being built
                catalog_cache.availability_changed(event_ids={event.event_id})
            return value

        return run

    def read(builder) -> bytes:
        return catalog_cache.page_read(key, builder, event_id=event.event_id).data

    assert read(build(b"old")) == b"old"
    assert read(build(b"new")) == b"new"
    assert read(build(b"unused")) == b"new"
    assert built == [b"old", b"new"]


def test_an_events_new_versions_are_written_with_their_expiry_and_read_back_as_the_cache_reads(event):
    """The versions of the events an order or a cancel moved: each one ``SET`` with its expiry in one round trip,
    new each time, and read back by the cache's own reads (the round trip that authenticates a catalog read)."""
    other = "evt_" + "f" * 24
    keys = [catalog_cache.event_version_key(event.event_id), catalog_cache.event_version_key(other)]
    catalog_cache.availability_changed(event_ids={event.event_id, other})
    first = catalog_cache.cache.get_many(keys)
    assert set(first) == set(keys) and len(set(first.values())) == 2
    client = catalog_cache.cache._cache.get_client(keys[0])
    for key in keys:
        ttl = client.ttl(catalog_cache.cache.make_and_validate_key(key))
        assert catalog_cache.EVENT_VERSION_SECONDS - 5 < ttl <= catalog_cache.EVENT_VERSION_SECONDS
    catalog_cache.availability_changed(event_ids={event.event_id})
    again = catalog_cache.cache.get_many(keys)
    assert again[keys[0]] != first[keys[0]] and again[keys[1]] == first[keys[1]]
