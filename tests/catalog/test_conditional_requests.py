"""docs/partners/conventions.md "Conditional requests": every catalog read carries a strong ETag and
``Cache-Control: private, no-cache``; ``If-None-Match`` with the current tag answers 304 (authenticated, one
request of the rate budget); any change that could alter the answer gives a new tag and the full 200. A current
answer is served from stored bytes, without DRF's dispatch, a serializer or a query."""

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.views import APIView

from catalog import cache as catalog_cache
from catalog import services
from catalog.models import Row
from config.api import ratelimit
from partners import services as partner_services
from tests.conftest import issue_token

from .factories import EventFactory

pytestmark = pytest.mark.django_db

ORDER_FORM = {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}


@pytest.fixture
def stored(settings):
    """The production default: answers kept 5 s in the shared cache and inside the process."""
    settings.CATALOG_CACHE_SECONDS = 5
    settings.CATALOG_LOCAL_CACHE_SECONDS = 5
    catalog_cache.local.clear()
    yield
    catalog_cache.local.clear()


def paths(event) -> list[str]:
    return [
        "/v1/events?limit=5",
        f"/v1/events/{event.event_id}",
        f"/v1/events/{event.event_id}/sections",
        f"/v1/events/{event.event_id}/sections/Lower%20101/rows",
    ]


def rows_of(response) -> dict[str, int]:
    assert response.status_code == 200, response.content
    return {r["row_name"]: r["available_quantity"] for r in response.json()["data"]["results"]}


def order(client, event, *, quantity: int) -> dict:
    body = {"event_id": event.event_id, "section_name": "Lower 101", "row_name": "A", "quantity": quantity}
    quote = client.post("/v1/quotes", body, format="json")
    assert quote.status_code == 201, quote.content
    created = client.post("/v1/orders", {"quote_id": quote.json()["data"]["quote_id"], **ORDER_FORM})
    assert created.status_code == 201, created.content
    return created.json()["data"]


def test_every_catalog_read_carries_a_strong_etag_and_private_no_cache(auth_client, event, stored):
    tags = set()
    for path in paths(event):
        response = auth_client.get(path)
        assert response.status_code == 200, (path, response.content)
        etag = response["ETag"]
        assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/"), etag
        assert response["Cache-Control"] == "private, no-cache"
        tags.add(etag)
    assert len(tags) == 4  # each answer its own tag


def test_the_current_tag_answers_304_without_a_body_but_with_its_headers(auth_client, event, stored):
    # The budget is counted per minute: start the requests one second into a fresh minute, so that the 200 and its
    # 304 always fall in the same window, however slowly the machine runs them.
    next_minute = (timezone.now() + timedelta(minutes=1)).replace(second=1, microsecond=0)
    with time_machine.travel(next_minute, tick=True):
        _answers_304_with_headers(auth_client, event)


def _answers_304_with_headers(auth_client, event):
    for path in paths(event):
        first = auth_client.get(path)
        before = int(first["RateLimit-Remaining"])
        again = auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"], HTTP_X_REQUEST_ID="req-conditional-1")
        assert again.status_code == 304, (path, again.content)
        assert again.content == b""
        assert again["ETag"] == first["ETag"]
        assert again["Cache-Control"] == "private, no-cache"
        assert again["X-Request-ID"] == "req-conditional-1"
        # HTTP allows a 304 only the 200's own length (RFC 9110 8.6): it carries none.
        assert "Content-Length" not in again
        # A 304 costs one request of the budget, like the 200 it stands for.
        assert int(again["RateLimit-Remaining"]) == before - 1
        assert again["RateLimit-Limit"] and again["RateLimit-Reset"]


def test_a_head_with_the_current_tag_takes_the_whole_chain_to_the_same_304(auth_client, event, stored):
    for path in paths(event):
        first = auth_client.get(path)
        head = auth_client.head(path)
        assert head.status_code == 200 and head["ETag"] == first["ETag"], path
        assert head["Content-Length"] == first["Content-Length"]  # the GET's length, as HTTP asks of a HEAD
        again = auth_client.head(path, HTTP_IF_NONE_MATCH=first["ETag"])
        assert again.status_code == 304, (path, again.content)
        assert again["ETag"] == first["ETag"] and again["X-Request-ID"] and again["RateLimit-Remaining"]
        assert "Content-Length" not in again


def test_a_list_of_tags_a_weak_form_and_a_star_match_like_http_says(auth_client, event, stored):
    path = paths(event)[3]
    etag = auth_client.get(path)["ETag"]
    assert auth_client.get(path, HTTP_IF_NONE_MATCH=f'"other", {etag}').status_code == 304
    assert auth_client.get(path, HTTP_IF_NONE_MATCH=f"W/{etag}").status_code == 304
    assert auth_client.get(path, HTTP_IF_NONE_MATCH="*").status_code == 304
    assert auth_client.get(path, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200


def test_a_bad_token_with_the_current_tag_is_still_401(auth_client, event, stored):
    path = paths(event)[0]
    etag = auth_client.get(path)["ETag"]
    stranger = APIClient()
    for header in ("Bearer not-a-token", "Basic abc", ""):
        if header:
            stranger.credentials(HTTP_AUTHORIZATION=header)
        response = stranger.get(path, HTTP_IF_NONE_MATCH=etag)
        assert response.status_code == 401, (header, response.content)
        assert response.json()["error"]["code"] == "UNAUTHORIZED"
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert "ETag" not in response


def test_a_revoked_token_with_the_current_tag_is_401(
    auth_client, partner_creds, event, stored, django_capture_on_commit_callbacks
):
    path = paths(event)[2]
    etag = auth_client.get(path)["ETag"]
    with django_capture_on_commit_callbacks(execute=True):
        partner_services.credentials_rotate(partner=partner_creds.partner, livemode=True)
    response = auth_client.get(path, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 401, response.content


def test_an_order_and_a_cancel_make_the_tag_stale_and_the_next_read_exact(
    auth_client, event, stored, django_capture_on_commit_callbacks
):
    path = paths(event)[3]
    first = auth_client.get(path)
    assert rows_of(first) == {"A": 8, "B": 16}
    with django_capture_on_commit_callbacks(execute=True):
        created = order(auth_client, event, quantity=3)
    after_order = auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert rows_of(after_order) == {"A": 5, "B": 16}
    assert after_order["ETag"] != first["ETag"]
    sections = auth_client.get(paths(event)[2]).json()["data"]["results"]
    assert {s["section_name"]: s["available_quantity"] for s in sections}["Lower 101"] == 21

    with django_capture_on_commit_callbacks(execute=True):
        canceled = auth_client.post(f"/v1/orders/{created['order_id']}/cancel")
    assert canceled.status_code == 200, canceled.content
    after_cancel = auth_client.get(path, HTTP_IF_NONE_MATCH=after_order["ETag"])
    assert rows_of(after_cancel) == {"A": 8, "B": 16}
    assert after_cancel["ETag"] not in (first["ETag"], after_order["ETag"])


def test_a_staff_edit_makes_the_event_tags_stale(
    auth_client, event, stored, django_capture_on_commit_callbacks
):
    listing, detail = paths(event)[0], paths(event)[1]
    list_tag, detail_tag = auth_client.get(listing)["ETag"], auth_client.get(detail)["ETag"]
    event.name = "Harbor Lights Tour (moved)"
    with django_capture_on_commit_callbacks(execute=True):
        services.event_save(event=event)
    response = auth_client.get(detail, HTTP_IF_NONE_MATCH=detail_tag)
    assert response.status_code == 200
    assert response.json()["data"]["event_name"] == "Harbor Lights Tour (moved)"
    response = auth_client.get(listing, HTTP_IF_NONE_MATCH=list_tag)
    assert response.status_code == 200
    assert response.json()["data"]["results"][0]["event_name"] == "Harbor Lights Tour (moved)"


def test_the_tag_names_the_query_and_the_mode(auth_client, partner_creds, event, stored):
    assert auth_client.get("/v1/events?limit=5")["ETag"] != auth_client.get("/v1/events?limit=6")["ETag"]
    # The same query spelled differently is the same answer, and the same tag.
    assert (
        auth_client.get("/v1/events?limit=5&q=harbor")["ETag"]
        == auth_client.get("/v1/events?q=harbor&limit=5")["ETag"]
    )
    issued = partner_services.credentials_rotate(partner=partner_creds.partner, livemode=False)
    test_client = APIClient()
    test_creds = type(partner_creds)(partner_creds.partner, issued.client_id, issued.client_secret)
    test_client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(test_client, test_creds)}")
    live, test = auth_client.get("/v1/events?limit=5"), test_client.get("/v1/events?limit=5")
    assert live.json()["data"] == test.json()["data"]
    assert live["ETag"] != test["ETag"]
    assert test_client.get("/v1/events?limit=5", HTTP_IF_NONE_MATCH=live["ETag"]).status_code == 200


def test_a_current_answer_is_served_without_drf_a_serializer_or_a_query(
    auth_client, event, stored, django_assert_num_queries
):
    for path in paths(event):
        first = auth_client.get(path)
        with (
            django_assert_num_queries(0),
            mock.patch.object(APIView, "dispatch", side_effect=AssertionError("DRF dispatch")),
            mock.patch("catalog.reads.encoded", side_effect=AssertionError("serialized again")),
        ):
            again = auth_client.get(path, HTTP_X_REQUEST_ID="req-from-store")
            assert auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
        assert again.status_code == 200
        body = again.json()
        assert body["data"] == first.json()["data"]
        assert body["meta"]["request_id"] == "req-from-store" == again["X-Request-ID"]
        assert body["meta"]["timestamp"].endswith("Z")


def test_errors_keep_their_envelope_on_the_stored_path(auth_client, event, stored):
    response = auth_client.get("/v1/events?limit=500")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert response.json()["error"]["details"]["field"] == "limit"
    assert response["RateLimit-Remaining"]
    response = auth_client.get("/v1/events/evt_nope/sections")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "EVENT_NOT_FOUND"
    response = auth_client.get(f"/v1/events/{event.event_id}/sections/Nope/rows")
    assert response.json()["error"]["code"] == "SECTION_NOT_FOUND"
    assert "ETag" not in response


def test_without_the_shared_cache_tags_name_the_answer_itself(auth_client, event, stored):
    path = paths(event)[3]
    with (
        mock.patch.object(catalog_cache.cache, "get_many", side_effect=ConnectionError("redis down")),
        mock.patch.object(catalog_cache.cache, "set", side_effect=ConnectionError("redis down")),
        mock.patch.object(ratelimit, "_count", side_effect=ConnectionError("redis down")),
    ):
        first = auth_client.get(path)
        assert rows_of(first) == {"A": 8, "B": 16}
        assert auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
        Row.objects.filter(section__event=event, name="A").update(available_quantity=2)
        changed = auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
        assert rows_of(changed) == {"A": 2, "B": 16}
        assert changed["ETag"] != first["ETag"]


def test_any_write_to_what_an_event_shows_makes_its_tags_stale(
    auth_client, event, stored, django_capture_on_commit_callbacks
):
    """A venue or a performer renamed outside the catalog's services (the admin's plain pages, a shell)."""
    listing, detail = paths(event)[0], paths(event)[1]
    list_tag, detail_tag = auth_client.get(listing)["ETag"], auth_client.get(detail)["ETag"]
    venue = event.venue
    venue.name = "Harbor Hall"
    with django_capture_on_commit_callbacks(execute=True):
        venue.save()
    renamed = auth_client.get(detail, HTTP_IF_NONE_MATCH=detail_tag)
    assert renamed.status_code == 200
    assert renamed.json()["data"]["venue"]["venue_name"] == "Harbor Hall"
    listed = auth_client.get(listing, HTTP_IF_NONE_MATCH=list_tag)
    assert listed.status_code == 200 and listed["ETag"] != list_tag
    performer = event.performers.get()
    performer.name = "Harbor Nights"
    with django_capture_on_commit_callbacks(execute=True):
        performer.save()
    again = auth_client.get(detail, HTTP_IF_NONE_MATCH=renamed["ETag"])
    assert again.json()["data"]["performers"][0]["performer_name"] == "Harbor Nights"


def test_a_version_the_cache_missed_is_written_before_the_next_read(
    auth_client, event, stored, django_capture_on_commit_callbacks
):
    """The shared cache did not answer when the order's commit replaced the event's version: the process
    writes it again before it serves its next catalog read, which is exact, and the old tag is stale."""
    path = paths(event)[3]
    first = auth_client.get(path)
    with django_capture_on_commit_callbacks() as after_commit:
        order(auth_client, event, quantity=3)
    with mock.patch.object(catalog_cache.cache, "set_many", side_effect=ConnectionError("redis blinked")):
        for callback in after_commit:
            callback()
    assert catalog_cache.unsent.events == {event.event_id}
    after = auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert rows_of(after) == {"A": 5, "B": 16}
    assert after["ETag"] != first["ETag"]
    assert not catalog_cache.unsent


def test_the_events_list_tag_goes_stale_when_a_listed_event_starts(auth_client, event, stored):
    """Without ``date_from`` the list holds the events not started yet: it changes by itself when the first
    one starts, with no write to the catalog, and its tag with it."""
    soon = EventFactory(name="Starts Soon", starts_at=timezone.now() + timedelta(minutes=30))
    first = auth_client.get("/v1/events")
    assert [e["event_name"] for e in first.json()["data"]["results"]] == ["Starts Soon", "Harbor Lights Tour"]
    assert auth_client.get("/v1/events", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    with time_machine.travel(soon.starts_at + timedelta(seconds=1)):
        later = auth_client.get("/v1/events", HTTP_IF_NONE_MATCH=first["ETag"])
        assert later.status_code == 200
        assert [e["event_name"] for e in later.json()["data"]["results"]] == ["Harbor Lights Tour"]
        assert later["ETag"] != first["ETag"]
        # A list whose dates are given does not change with the clock.
        dated = f"/v1/events?date_from={soon.event_date.isoformat()}"
        assert auth_client.get(dated, HTTP_IF_NONE_MATCH=auth_client.get(dated)["ETag"]).status_code == 304
