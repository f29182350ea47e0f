"""GET /v1/events/{id}/sections and GET /v1/events/{id}/sections/{name}/rows."""

from decimal import Decimal
from urllib.parse import quote

import pytest

from catalog.serializers import RowSerializer, SectionSerializer
from tests.conftest import assert_error

from .factories import EventFactory, RowFactory, SectionFactory

pytestmark = pytest.mark.django_db


def results(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return response.json()["data"]["results"]


def test_sections_list_totals_quantity_and_lowest_offer(auth_client, event):
    sections = results(auth_client.get(f"/v1/events/{event.event_id}/sections"))
    assert sections == [
        {
            "section_name": "Floor GA",
            "section_name_display": "Floor GA (display)",
            "general_admission": True,
            "available_quantity": 40,
            "min_offer_price": 95.0,
        },
        {
            "section_name": "Lower 101",
            "section_name_display": "Lower Level 101",
            "general_admission": False,
            "available_quantity": 24,
            "min_offer_price": 120.5,
        },
    ]
    assert set(sections[0]) == set(SectionSerializer().fields)


def test_sections_lowest_offer_ignores_rows_with_nothing_available(auth_client, db):
    section = SectionFactory(name="Upper 300")
    RowFactory(section=section, name="A", offer_price="50.00", available_quantity=0)
    RowFactory(section=section, name="B", offer_price="70.00", available_quantity=3)
    empty = SectionFactory(event=section.event, name="Upper 301")
    RowFactory(section=empty, name="A", offer_price="10.00", available_quantity=0)
    bare = SectionFactory(event=section.event, name="Upper 302")
    by_name = {
        s["section_name"]: s
        for s in results(auth_client.get(f"/v1/events/{section.event.event_id}/sections"))
    }
    assert by_name["Upper 300"]["min_offer_price"] == 70.0
    assert by_name["Upper 300"]["available_quantity"] == 3
    assert by_name["Upper 301"]["min_offer_price"] is None
    assert by_name["Upper 301"]["available_quantity"] == 0
    assert by_name[bare.name]["available_quantity"] == 0


def test_sections_of_unknown_event_is_event_not_found(auth_client, db):
    assert_error(auth_client.get("/v1/events/evt_nope/sections"), 404, "EVENT_NOT_FOUND")


def test_sections_list_is_paginated(auth_client, db):
    event = EventFactory()
    for i in range(7):
        SectionFactory(event=event, name=f"S{i}")
    first = auth_client.get(f"/v1/events/{event.event_id}/sections?limit=5").json()["data"]
    assert [s["section_name"] for s in first["results"]] == ["S0", "S1", "S2", "S3", "S4"]
    assert first["has_more"] is True
    second = auth_client.get(
        f"/v1/events/{event.event_id}/sections?limit=5&cursor={first['next_cursor']}"
    ).json()["data"]
    assert [s["section_name"] for s in second["results"]] == ["S5", "S6"]
    assert second["has_more"] is False and second["next_cursor"] is None


@pytest.mark.parametrize(
    ("query", "field"), [("limit=0", "limit"), ("limit=500", "limit"), ("cursor=%%%", "cursor")]
)
def test_sections_bad_paging_is_validation_error(auth_client, event, query, field):
    error = assert_error(
        auth_client.get(f"/v1/events/{event.event_id}/sections?{query}"), 400, "VALIDATION_ERROR"
    )
    assert error["details"]["field"] == field


def test_rows_list_returns_prices_in_their_formats(auth_client, event):
    RowFactory(
        section=event.sections.get(name="Lower 101"),
        name="C",
        name_display="Row C",
        offer_price=Decimal("99.99"),
        face_value=Decimal("120"),
        available_quantity=2,
        restrictions=["Obstructed view", "Limited view"],
        restriction_detail="Pillar in front of seats 1-2.",
    )
    response = auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows")
    rows = results(response)
    assert [r["row_name"] for r in rows] == ["A", "B", "C"]
    assert rows[2] == {
        "row_name": "C",
        "row_name_display": "Row C",
        "available_quantity": 2,
        "offer_price": 99.99,
        "face_value": "120.00",
        "restrictions": ["Obstructed view", "Limited view"],
        "restriction_detail": "Pillar in front of seats 1-2.",
    }
    assert rows[0]["restrictions"] == [] and rows[0]["restriction_detail"] is None
    # Prices are written as short decimal numbers, never as binary-float noise.
    assert b'"offer_price":142.25' in response.content
    assert b'"offer_price":120.5' in response.content
    assert set(rows[0]) == set(RowSerializer().fields)


def test_rows_of_a_general_admission_section(auth_client, event):
    rows = results(auth_client.get(f"/v1/events/{event.event_id}/sections/Floor%20GA/rows"))
    assert [r["row_name"] for r in rows] == ["GA"]


def test_rows_section_name_with_an_encoded_slash(auth_client, db):
    section = SectionFactory(name="Lower/101 Club", name_display="Lower 101 Club")
    RowFactory(section=section, name="AA")
    path = f"/v1/events/{section.event.event_id}/sections/{quote('Lower/101 Club', safe='')}/rows"
    assert "%2F" in path and "%20" in path
    assert [r["row_name"] for r in results(auth_client.get(path))] == ["AA"]
    # A raw slash reaches the same section.
    raw = f"/v1/events/{section.event.event_id}/sections/Lower/101%20Club/rows"
    assert [r["row_name"] for r in results(auth_client.get(raw))] == ["AA"]


def test_rows_section_name_with_unicode_and_symbols(auth_client, db):
    section = SectionFactory(name="Café & Bar #2")
    RowFactory(section=section, name="1")
    path = f"/v1/events/{section.event.event_id}/sections/{quote('Café & Bar #2', safe='')}/rows"
    assert [r["row_name"] for r in results(auth_client.get(path))] == ["1"]


def test_rows_of_unknown_section_is_section_not_found(auth_client, event):
    error = assert_error(
        auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20999/rows"), 404, "SECTION_NOT_FOUND"
    )
    assert error["details"]["section_name"] == "Lower 999"


def test_rows_section_names_are_case_sensitive(auth_client, event):
    assert_error(
        auth_client.get(f"/v1/events/{event.event_id}/sections/lower%20101/rows"), 404, "SECTION_NOT_FOUND"
    )


def test_rows_of_unknown_event_is_event_not_found(auth_client, db):
    assert_error(auth_client.get("/v1/events/evt_nope/sections/Lower%20101/rows"), 404, "EVENT_NOT_FOUND")


def test_rows_of_another_events_section_is_section_not_found(auth_client, event):
    other = EventFactory()
    assert_error(
        auth_client.get(f"/v1/events/{other.event_id}/sections/Lower%20101/rows"), 404, "SECTION_NOT_FOUND"
    )


def test_rows_bad_limit_is_validation_error(auth_client, event):
    error = assert_error(
        auth_client.get(f"/v1/events/{event.event_id}/sections/Floor%20GA/rows?limit=-1"),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"]["field"] == "limit"


@pytest.mark.parametrize("limit", [2, 50])
def test_sections_and_rows_query_count_does_not_grow_with_page_size(
    auth_client, no_catalog_cache, django_assert_num_queries, limit
):
    event = EventFactory()
    big = SectionFactory(event=event, name="Big")
    for i in range(55):
        SectionFactory(event=event, name=f"S{i:02d}")
        RowFactory(section=big, name=f"R{i:02d}")
    auth_client.get("/v1/events?limit=1")  # warm the token session cache
    with django_assert_num_queries(
        1
    ):  # the page of sections with their totals, its event in the same statement
        assert len(results(auth_client.get(f"/v1/events/{event.event_id}/sections?limit={limit}"))) == limit
    with django_assert_num_queries(1):  # the page of rows, its section found in the same statement
        assert (
            len(results(auth_client.get(f"/v1/events/{event.event_id}/sections/Big/rows?limit={limit}")))
            == limit
        )
