"""GET /v1/events and GET /v1/events/{id}: filters, defaults, pagination, errors, query counts."""

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone

from catalog import services
from catalog.models import Event
from catalog.serializers import EventSerializer, VenueSerializer
from tests.conftest import assert_error

from .conftest import client_with_scope
from .factories import EventFactory, PerformerFactory, VenueFactory

pytestmark = [pytest.mark.django_db, pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))]


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [e["event_name"] for e in response.json()["data"]["results"]]


def walk(client, url: str) -> list[dict]:
    """Every result of a list, following next_cursor to the end."""
    seen, cursor = [], None
    while True:
        sep = "&" if "?" in url else "?"
        response = client.get(url + (f"{sep}cursor={cursor}" if cursor else ""))
        assert response.status_code == 200, response.content
        data = response.json()["data"]
        seen.extend(data["results"])
        if not data["has_more"]:
            assert data["next_cursor"] is None
            return seen
        cursor = data["next_cursor"]


# --- authentication ---------------------------------------------------------------------------------------
def test_event_list_without_token_is_unauthorized(api_client):
    response = api_client.get("/v1/events")
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_event_list_needs_events_read_scope(partner):
    response = client_with_scope(partner, "quotes:write").get("/v1/events")
    error = assert_error(response, 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "events:read"


@pytest.mark.parametrize(
    "path", ["/v1/events/evt_x", "/v1/events/evt_x/sections", "/v1/events/evt_x/sections/A/rows"]
)
def test_catalog_endpoints_need_a_token_and_the_scope(api_client, partner, path):
    assert_error(api_client.get(path), 401, "UNAUTHORIZED")
    assert_error(client_with_scope(partner, "orders:write").get(path), 403, "FORBIDDEN")


# --- shape ----------------------------------------------------------------------------------------------
def test_event_list_returns_event_fields(auth_client, event):
    response = auth_client.get("/v1/events")
    body = response.json()
    assert body["success"] is True
    data = body["data"]
    assert data["has_more"] is False and data["next_cursor"] is None
    [item] = data["results"]
    local = event.starts_at.astimezone(event.zone)
    assert item == {
        "event_id": event.event_id,
        "event_name": "Harbor Lights Tour",
        "event_datetime_utc": event.starts_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "event_datetime_local": local.strftime("%Y-%m-%dT%H:%M:%S"),
        "event_timezone": "America/New_York",
        "event_date": local.date().isoformat(),
        "venue": {
            "venue_id": event.venue.venue_id,
            "venue_name": "Madison Square Garden",
            "city": "New York",
            "state": "NY",
            "country": "US",
        },
        "performers": [{"performer_id": event.performers.get().performer_id, "performer_name": "Harbor"}],
        "primary_site": "ticketmaster",
        "status": "scheduled",
    }
    # The documented schema names exactly the fields sent.
    assert set(item) == set(EventSerializer().fields)
    assert set(item["venue"]) == set(VenueSerializer().fields)


def test_event_detail_returns_the_event(auth_client, event):
    response = auth_client.get(f"/v1/events/{event.event_id}")
    assert response.status_code == 200
    assert response.json()["data"]["event_id"] == event.event_id
    assert response.json()["data"]["event_name"] == "Harbor Lights Tour"


def test_event_detail_unknown_id_is_event_not_found(auth_client, db):
    assert_error(auth_client.get("/v1/events/evt_doesnotexist"), 404, "EVENT_NOT_FOUND")


def test_event_detail_shows_past_and_canceled_events(auth_client):
    past = EventFactory(starts_at=timezone.now() - timedelta(days=3))
    services.event_cancel(event=past)
    data = auth_client.get(f"/v1/events/{past.event_id}").json()["data"]
    assert data["status"] == "canceled"


def test_event_local_date_follows_the_venue_time_zone(auth_client):
    venue = VenueFactory(city="Los Angeles", state="CA", timezone="America/Los_Angeles")
    # 05:30 UTC on March 11 is 22:30 on March 10 in Los Angeles.
    starts_at = datetime(2030, 3, 11, 5, 30, tzinfo=UTC)
    event = services.event_create(name="Late Show", venue=venue, starts_at=starts_at, primary_site="AXS")
    data = auth_client.get(f"/v1/events/{event.event_id}").json()["data"]
    assert data["event_date"] == "2030-03-10"
    assert data["event_datetime_local"] == "2030-03-10T22:30:00"
    assert data["event_datetime_utc"] == "2030-03-11T05:30:00Z"
    assert data["primary_site"] == "axs"
    assert names(auth_client.get("/v1/events?date_from=2030-03-10&date_to=2030-03-10")) == ["Late Show"]
    assert names(auth_client.get("/v1/events?date_from=2030-03-11&date_to=2030-03-11")) == []


# --- default window and dates -----------------------------------------------------------------------------
def test_event_list_hides_events_that_have_started(auth_client):
    now = timezone.now()
    EventFactory(name="Yesterday", starts_at=now - timedelta(days=1))
    EventFactory(name="A minute ago", starts_at=now - timedelta(minutes=1))
    EventFactory(name="Tonight", starts_at=now + timedelta(hours=3))
    assert names(auth_client.get("/v1/events")) == ["Tonight"]


def test_event_list_drops_an_event_once_it_starts(auth_client, no_catalog_cache):
    start = timezone.now() + timedelta(minutes=30)
    EventFactory(name="Soon", starts_at=start)
    assert names(auth_client.get("/v1/events")) == ["Soon"]
    with time_machine.travel(start + timedelta(seconds=1)):
        assert names(auth_client.get("/v1/events")) == []


def test_event_list_date_from_in_the_past_includes_past_events(auth_client):
    now = timezone.now()
    EventFactory(name="Last week", starts_at=now - timedelta(days=7))
    EventFactory(name="Last month", starts_at=now - timedelta(days=40))
    EventFactory(name="Next week", starts_at=now + timedelta(days=7))
    date_from = (now - timedelta(days=10)).date().isoformat()
    assert names(auth_client.get(f"/v1/events?date_from={date_from}")) == ["Last week", "Next week"]


def test_event_list_date_range_is_inclusive(auth_client):
    venue = VenueFactory(timezone="UTC")
    for day in (1, 2, 3, 4):
        services.event_create(
            name=f"June {day}",
            venue=venue,
            starts_at=datetime(2031, 6, day, 20, 0, tzinfo=UTC),
            primary_site="seatgeek",
        )
    assert names(auth_client.get("/v1/events?date_from=2031-06-02&date_to=2031-06-03")) == [
        "June 2",
        "June 3",
    ]
    assert names(auth_client.get("/v1/events?date_to=2031-06-01")) == ["June 1"]


# --- filters ---------------------------------------------------------------------------------------------
@pytest.fixture
def catalog(db):
    garden = VenueFactory(name="Madison Square Garden", city="New York", state="NY")
    forum = VenueFactory(name="Kia Forum", city="Inglewood", state="CA", timezone="America/Los_Angeles")
    hall = VenueFactory(
        name="Royal Albert Hall", city="London", state="", country="GB", timezone="Europe/London"
    )
    nova = PerformerFactory(name="Nova Quartet")
    reds = PerformerFactory(name="Red Rockets")
    soon = timezone.now() + timedelta(days=2)
    return {
        "garden": garden,
        "forum": forum,
        "nova": nova,
        "reds": reds,
        "events": [
            EventFactory(name="Nova Live", venue=garden, performers=[nova], primary_site="ticketmaster",
                         starts_at=soon),
            EventFactory(name="Rockets Night", venue=forum, performers=[reds], primary_site="axs",
                         starts_at=soon + timedelta(days=1)),
            EventFactory(name="Double Bill", venue=garden, performers=[nova, reds], primary_site="axs",
                         starts_at=soon + timedelta(days=2)),
            EventFactory(name="Proms", venue=hall, primary_site="seatgeek", starts_at=soon + timedelta(days=3)),
        ],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=nova", ["Nova Live", "Double Bill"]),  # event name and performer name
        ("q=FORUM", ["Rockets Night"]),  # venue name, any case
        ("q=london", ["Proms"]),  # city
        ("q=rocket", ["Rockets Night", "Double Bill"]),
        ("venue_name=square", ["Nova Live", "Double Bill"]),
        ("performer_name=RED", ["Rockets Night", "Double Bill"]),
        ("city=new%20york", ["Nova Live", "Double Bill"]),
        ("city=new", []),  # exact, not substring
        ("primary_site=AXS", ["Rockets Night", "Double Bill"]),
        ("primary_site=ax", []),
        ("q=nothing-like-this", []),
    ],
)
def test_event_list_filters(auth_client, catalog, query, expected):
    assert names(auth_client.get(f"/v1/events?{query}")) == expected


def test_event_list_filters_by_venue_and_performer_id(auth_client, catalog):
    garden, reds = catalog["garden"], catalog["reds"]
    assert names(auth_client.get(f"/v1/events?venue_id={garden.venue_id}")) == ["Nova Live", "Double Bill"]
    assert names(auth_client.get(f"/v1/events?performer_id={reds.performer_id}")) == [
        "Rockets Night",
        "Double Bill",
    ]
    assert names(auth_client.get("/v1/events?venue_id=ven_unknown")) == []


def test_event_list_filters_combine(auth_client, catalog):
    garden, reds = catalog["garden"], catalog["reds"]
    assert names(
        auth_client.get(f"/v1/events?venue_id={garden.venue_id}&performer_id={reds.performer_id}")
    ) == ["Double Bill"]
    assert names(auth_client.get("/v1/events?q=nova&primary_site=axs")) == ["Double Bill"]
    assert names(auth_client.get("/v1/events?city=New%20York&primary_site=ticketmaster")) == ["Nova Live"]
    last = catalog["events"][-1].event_date.isoformat()
    assert names(auth_client.get(f"/v1/events?date_from={last}&q=proms")) == ["Proms"]
    assert names(auth_client.get(f"/v1/events?date_from={last}&q=nova")) == []


def test_event_list_performer_filter_lists_each_event_once(auth_client, catalog):
    results = auth_client.get("/v1/events?q=o").json()["data"]["results"]
    ids = [r["event_id"] for r in results]
    assert len(ids) == len(set(ids)) == 4
    double = next(r for r in results if r["event_name"] == "Double Bill")
    assert [p["performer_name"] for p in double["performers"]] == ["Nova Quartet", "Red Rockets"]


@pytest.mark.parametrize(
    ("query", "field", "issue"),
    [
        ("date_from=2026-13-01", "date_from", "invalid"),
        ("date_from=tomorrow", "date_from", "invalid"),
        ("date_to=01/02/2027", "date_to", "invalid"),
        ("date_from=2027-02-02&date_to=2027-02-01", "date_to", "invalid"),
        ("limit=0", "limit", "out_of_range"),
        ("limit=101", "limit", "out_of_range"),
        ("limit=ten", "limit", "invalid"),
        ("cursor=not-a-cursor", "cursor", "invalid"),
        ("q=" + "x" * 201, "q", "too_long"),
    ],
)
def test_event_list_bad_parameter_is_validation_error_naming_the_field(auth_client, db, query, field, issue):
    error = assert_error(auth_client.get(f"/v1/events?{query}"), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == field
    assert error["details"]["issue"] == issue


def test_event_list_reports_every_bad_parameter(auth_client, db):
    error = assert_error(auth_client.get("/v1/events?limit=0&date_from=nope"), 400, "VALIDATION_ERROR")
    assert {e["field"] for e in error["details"]["errors"]} == {"limit", "date_from"}


def test_event_list_ignores_unknown_parameters(auth_client, event):
    assert names(auth_client.get("/v1/events?colour=blue")) == ["Harbor Lights Tour"]


def test_event_list_cursor_of_another_list_is_rejected(auth_client, event):
    SectionCursor = auth_client.get(f"/v1/events/{event.event_id}/sections?limit=1").json()["data"]
    error = assert_error(
        auth_client.get(f"/v1/events?cursor={SectionCursor['next_cursor']}"), 400, "VALIDATION_ERROR"
    )
    assert error["details"]["field"] == "cursor"


# --- pagination --------------------------------------------------------------------------------------------
def test_event_list_pagination_walks_every_event_once_while_events_are_added(auth_client, no_catalog_cache):
    base = timezone.now() + timedelta(days=1)
    venue = VenueFactory()
    # Several events share a start time, so the cursor must break ties on id.
    originals = [
        EventFactory(name=f"E{i:02d}", venue=venue, starts_at=base + timedelta(hours=i // 3))
        for i in range(25)
    ]
    seen: list[str] = []
    cursor = None
    added = 0
    while True:
        url = "/v1/events?limit=4" + (f"&cursor={cursor}" if cursor else "")
        data = auth_client.get(url).json()["data"]
        seen.extend(r["event_id"] for r in data["results"])
        if not data["has_more"]:
            break
        cursor = data["next_cursor"]
        # Insert events before the cursor (already walked), at it, and after it (still to come).
        EventFactory(name=f"early{added}", venue=venue, starts_at=base - timedelta(minutes=30))
        EventFactory(name=f"tie{added}", venue=venue, starts_at=base)
        EventFactory(name=f"late{added}", venue=venue, starts_at=base + timedelta(days=5, minutes=added))
        added += 1
    assert len(seen) == len(set(seen)), "an event was listed twice"
    assert {e.event_id for e in originals} <= set(seen), "an event was skipped"
    # Every event added after the walked position was reached; none before it was.
    late_ids = set(Event.objects.filter(name__startswith="late").values_list("event_id", flat=True))
    early_ids = set(Event.objects.filter(name__startswith="early").values_list("event_id", flat=True))
    assert late_ids <= set(seen)
    assert not early_ids & set(seen)


def test_event_list_limit_bounds_the_page(auth_client, no_catalog_cache):
    venue = VenueFactory()
    for i in range(5):
        EventFactory(venue=venue, name=f"N{i}")
    first = auth_client.get("/v1/events?limit=2").json()["data"]
    assert len(first["results"]) == 2 and first["has_more"] is True
    assert len(walk(auth_client, "/v1/events?limit=2")) == 5
    assert len(auth_client.get("/v1/events").json()["data"]["results"]) == 5


def _make_events(count: int) -> None:
    venue = VenueFactory()
    performers = [PerformerFactory(), PerformerFactory()]
    for _ in range(count):
        EventFactory(venue=VenueFactory() if _ % 2 else venue, performers=performers)


@pytest.mark.parametrize("limit", [2, 50])
def test_event_list_query_count_does_not_grow_with_page_size(
    auth_client, no_catalog_cache, django_assert_num_queries, limit
):
    _make_events(60)
    auth_client.get("/v1/events?limit=1")  # warm the token session cache
    with django_assert_num_queries(2):  # the page (with venues), then the performers of the page
        response = auth_client.get(f"/v1/events?limit={limit}")
    assert len(response.json()["data"]["results"]) == limit
    assert all(len(e["performers"]) == 2 for e in response.json()["data"]["results"])


@pytest.mark.parametrize("limit", [2, 50])
def test_event_list_query_count_with_every_filter_does_not_grow_with_page_size(
    auth_client, no_catalog_cache, django_assert_num_queries, limit
):
    _make_events(60)
    auth_client.get("/v1/events?limit=1")
    # Venues and performers of the filters are resolved first (one query each for the AND filters,
    # one each for q), then the page and its performers.
    with django_assert_num_queries(6):
        response = auth_client.get(
            f"/v1/events?limit={limit}&q=e&city=new%20york&performer_name=performer&date_from=2000-01-01"
        )
    assert len(response.json()["data"]["results"]) == limit


def test_event_detail_query_count(auth_client, event, no_catalog_cache, django_assert_num_queries):
    auth_client.get("/v1/events?limit=1")
    with django_assert_num_queries(2):
        assert auth_client.get(f"/v1/events/{event.event_id}").status_code == 200


# --- caching ----------------------------------------------------------------------------------------------
def test_event_list_repeated_within_seconds_is_served_from_the_cache(
    auth_client, event, django_assert_num_queries
):
    first = auth_client.get("/v1/events")
    with django_assert_num_queries(0):
        second = auth_client.get("/v1/events")
    assert second.json()["data"] == first.json()["data"]


def test_catalog_edit_shows_at_once_despite_the_cache(auth_client, event, django_capture_on_commit_callbacks):
    assert names(auth_client.get("/v1/events")) == ["Harbor Lights Tour"]
    event.name = "Harbor Lights Tour (moved)"
    with django_capture_on_commit_callbacks(execute=True):
        services.event_save(event=event)
    assert names(auth_client.get("/v1/events")) == ["Harbor Lights Tour (moved)"]
    with django_capture_on_commit_callbacks(execute=True):
        services.event_cancel(event=event)
    assert auth_client.get(f"/v1/events/{event.event_id}").json()["data"]["status"] == "canceled"


def test_cached_page_keeps_the_envelope_and_request_id(auth_client, event):
    auth_client.get("/v1/events")
    response = auth_client.get("/v1/events", HTTP_X_REQUEST_ID="req-from-client-42")
    body = response.json()
    assert body["success"] is True
    assert body["meta"]["request_id"] == "req-from-client-42" == response["X-Request-ID"]
    assert body["meta"]["timestamp"].endswith("Z")
    assert response["Content-Type"].startswith("application/json")
    assert response["RateLimit-Limit"]


def test_in_process_tier_serves_repeats_and_is_cleared_by_catalog_writes(
    auth_client, event, settings, django_assert_num_queries, django_capture_on_commit_callbacks
):
    from catalog import cache as catalog_cache

    settings.CATALOG_LOCAL_CACHE_SECONDS = 1
    catalog_cache.local.clear()
    try:
        assert names(auth_client.get("/v1/events")) == ["Harbor Lights Tour"]
        no_round_trip = mock.patch.object(catalog_cache.cache, "get_many", side_effect=AssertionError("trip"))
        with no_round_trip, django_assert_num_queries(0):
            assert names(auth_client.get("/v1/events")) == ["Harbor Lights Tour"]
        event.name = "Harbor Lights Tour II"
        with django_capture_on_commit_callbacks(execute=True):
            services.event_save(event=event)
        assert names(auth_client.get("/v1/events")) == ["Harbor Lights Tour II"]
    finally:
        catalog_cache.local.clear()


def test_catalog_reads_fall_back_to_the_database_when_the_cache_is_down(auth_client, event):
    from catalog import cache as catalog_cache

    with (
        mock.patch.object(catalog_cache.cache, "get_many", side_effect=ConnectionError("redis down")),
        mock.patch.object(catalog_cache.cache, "set", side_effect=ConnectionError("redis down")),
    ):
        assert names(auth_client.get("/v1/events")) == ["Harbor Lights Tour"]
        assert auth_client.get(f"/v1/events/{event.event_id}").status_code == 200


# --- shared errors on the catalog endpoints -----------------------------------------------------------------
def test_event_list_with_an_expired_token_is_token_expired(auth_client, event):
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=1)):
        response = auth_client.get("/v1/events")
    assert_error(response, 401, "TOKEN_EXPIRED")
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_event_list_over_the_rate_limit_is_rate_limit_exceeded(auth_client, event, settings):
    settings.RATE_LIMIT_PER_MINUTE = 2
    assert auth_client.get("/v1/events").status_code == 200
    assert auth_client.get("/v1/events").status_code == 200
    response = auth_client.get("/v1/events")
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    assert int(response["Retry-After"]) >= 1


def test_catalog_endpoints_are_read_only(auth_client, event):
    response = auth_client.post("/v1/events", {}, format="json")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "GET" in response["Allow"]
    assert_error(auth_client.delete(f"/v1/events/{event.event_id}"), 405, "METHOD_NOT_ALLOWED")
