"""Forged or edited cursors are 400 VALIDATION_ERROR on ``cursor`` on every list endpoint, never a 500.

The cursors below are what a hostile client builds once it has seen that a cursor is base64url JSON:
the right ordering with values of the wrong type (nulls, a string where the id goes), or a real cursor
with its payload edited and the signature kept.
"""

import base64
import json

import pytest

from tests.conftest import assert_error

from .conftest import make_owned


def _b64(payload: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


FORGED = {
    "nulls": _b64({"o": ["starts_at", "id"], "v": [None, None]}),
    "string id": _b64({"o": ["name", "id"], "v": ["A", "not-an-id"]}),
    "orders nulls": _b64({"o": ["-created_at", "-id"], "v": [None, None]}),
    "orders string id": _b64({"o": ["-created_at", "-id"], "v": [{"dt": "2021-01-01T00:00:00+00:00"}, "x"]}),
    "object value": _b64({"o": ["starts_at", "id"], "v": [{"dt": "2021-01-01T00:00:00+00:00"}, {"x": 1}]}),
    "garbage signature": _b64({"o": ["starts_at", "id"], "v": [{"dt": "2021-01-01T00:00:00+00:00"}, 1]})
    + ".AAAAAAAAAAAAAAAAAAAAAA",
}


def _list_urls(row) -> dict[str, str]:
    event = row.section.event
    return {
        "events": "/v1/events",
        "sections": f"/v1/events/{event.event_id}/sections",
        "rows": f"/v1/events/{event.event_id}/sections/{row.section.name}/rows",
        "orders": "/v1/orders",
    }


def _assert_bad_cursor(client, url: str, cursor: str) -> None:
    error = assert_error(client.get(url, {"cursor": cursor}), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "cursor", error
    assert error["details"]["issue"] == "invalid", error


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_forged_cursor_on_the_events_list_is_a_validation_error(auth_client, row, cursor):
    _assert_bad_cursor(auth_client, _list_urls(row)["events"], cursor)


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_forged_cursor_on_the_sections_list_is_a_validation_error(auth_client, row, cursor):
    _assert_bad_cursor(auth_client, _list_urls(row)["sections"], cursor)


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_forged_cursor_on_the_rows_list_is_a_validation_error(auth_client, row, cursor):
    _assert_bad_cursor(auth_client, _list_urls(row)["rows"], cursor)


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_forged_cursor_on_the_orders_list_is_a_validation_error(auth_client, row, cursor):
    make_owned(auth_client, row)
    _assert_bad_cursor(auth_client, _list_urls(row)["orders"], cursor)


@pytest.mark.parametrize("endpoint", ["events", "sections", "rows", "orders"])
def test_a_real_cursor_with_its_payload_edited_is_refused_and_the_untouched_one_works(
    auth_client, row, endpoint, settings
):
    """Two items per list, page size 1: the first page's cursor works; the same cursor with one sort
    value changed (signature kept) is refused."""
    from tests.catalog.factories import EventFactory, RowFactory, SectionFactory

    settings.CATALOG_CACHE_SECONDS = 0
    other_event = EventFactory(starts_at=row.section.event.starts_at)
    SectionFactory(event=row.section.event, name="Upper 300")
    RowFactory(section=row.section, name="B")
    SectionFactory(event=other_event)
    make_owned(auth_client, row)
    make_owned(auth_client, row)  # two orders
    url = _list_urls(row)[endpoint]
    first = auth_client.get(url, {"limit": 1}).json()["data"]
    assert first["has_more"] is True and first["next_cursor"], first
    assert auth_client.get(url, {"limit": 1, "cursor": first["next_cursor"]}).status_code == 200

    payload_b64, signature = first["next_cursor"].split(".")
    payload = json.loads(base64.urlsafe_b64decode(payload_b64 + "=" * (-len(payload_b64) % 4)))
    payload["v"][-1] = "1 OR 1=1"
    _assert_bad_cursor(auth_client, url, f"{_b64(payload)}.{signature}")


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_forged_cursor_on_the_notifications_feed_is_a_validation_error(auth_client, row, cursor):
    make_owned(auth_client, row)  # an order, so the feed has notifications
    _assert_bad_cursor(auth_client, "/v1/notifications", cursor)


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_forged_cursor_on_the_webhook_endpoint_lists_is_a_validation_error(auth_client, cursor):
    created = auth_client.post(
        "/v1/webhook_endpoints", {"url": "http://127.0.0.1:9/hook", "event_types": ["*"]}, format="json"
    )
    assert created.status_code == 201, created.content
    endpoint_id = created.json()["data"]["endpoint_id"]
    _assert_bad_cursor(auth_client, "/v1/webhook_endpoints", cursor)
    _assert_bad_cursor(auth_client, f"/v1/webhook_endpoints/{endpoint_id}/deliveries", cursor)
