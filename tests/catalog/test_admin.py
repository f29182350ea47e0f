"""Staff admin: search and filters, inline sections and rows, event dates, and the cancel action."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from catalog.models import Event, Row
from quotes.codec import encode_quote_id
from quotes.services import quote_create
from tests.confirming import post_confirmed
from tests.conftest import assert_error

from .conftest import section_change_form
from .factories import EventFactory, RowFactory, SectionFactory, VenueFactory

pytestmark = [pytest.mark.django_db, pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))]


def test_admin_event_search_by_name_venue_and_city(admin_client, event):
    other = EventFactory(name="Quiet Evening", venue=VenueFactory(name="Ryman Auditorium", city="Nashville"))
    for term, shown, hidden in [
        ("harbor", event, other),
        ("square garden", event, other),
        ("nashville", other, event),
        ("ryman", other, event),
    ]:
        page = admin_client.get("/admin/catalog/event/", {"q": term}).content.decode()
        assert shown.name in page and hidden.name not in page, term


def test_admin_event_filters_by_site_status_and_date(admin_client, event):
    axs = EventFactory(name="Axs Only Show", primary_site="axs")
    page = admin_client.get("/admin/catalog/event/", {"primary_site": "axs"}).content.decode()
    assert axs.name in page and event.name not in page
    Event.objects.filter(pk=axs.pk).update(status="canceled")
    page = admin_client.get("/admin/catalog/event/", {"status__exact": "canceled"}).content.decode()
    assert axs.name in page and event.name not in page
    day = event.event_date
    page = admin_client.get(
        "/admin/catalog/event/", {"event_date__gte": day.isoformat(), "event_date__lte": day.isoformat()}
    ).content.decode()
    assert event.name in page


def test_admin_add_event_derives_local_date_and_venue_time_zone(admin_client):
    venue = VenueFactory(timezone="America/Los_Angeles")
    response = admin_client.post(
        "/admin/catalog/event/add/",
        {
            "name": "Late Show",
            "external_id": "",
            "venue": venue.pk,
            "starts_at_0": "2031-03-11",
            "starts_at_1": "05:30:00",
            "timezone": "",
            "primary_site": "SeatGeek",
            "status": "scheduled",
            "sections-TOTAL_FORMS": "1",
            "sections-INITIAL_FORMS": "0",
            "sections-0-name": "Floor/GA",
            "sections-0-name_display": "Floor",
            "sections-0-general_admission": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    event = Event.objects.get(name="Late Show")
    assert event.starts_at == datetime(2031, 3, 11, 5, 30, tzinfo=UTC)
    assert event.timezone == "America/Los_Angeles"
    assert str(event.event_date) == "2031-03-10"
    assert event.primary_site == "seatgeek"
    assert event.sections.get().general_admission is True


def test_admin_edit_row_inline_changes_the_price_for_new_quotes_only(
    admin_client, auth_client, partner, event, django_capture_on_commit_callbacks
):
    section = event.sections.get(name="Lower 101")
    old_quote = quote_create(
        partner_pk=partner.pk, event_id=event.event_id, section_name="Lower 101", row_name="A", quantity=1
    )
    data = section_change_form(section)
    data.update({"rows-0-offer_price": "150.00", "rows-0-restrictions": '["Limited view"]'})  # row A
    auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows")  # cache the rows page
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/admin/catalog/section/{section.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Row.objects.get(section=section, name="A").offer_price == Decimal("150.00")
    # The read API shows the edit at once, new quotes get the new price, the old quote keeps its own.
    rows_page = auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows").json()["data"][
        "results"
    ]
    assert rows_page[0]["offer_price"] == 150.0 and rows_page[0]["restrictions"] == ["Limited view"]
    new = auth_client.post(
        "/v1/quotes",
        {"event_id": event.event_id, "section_name": "Lower 101", "row_name": "A", "quantity": 1},
        format="json",
    ).json()["data"]
    assert new["offer_price"] == 150.0
    old = auth_client.get(f"/v1/quotes/{encode_quote_id(old_quote)}").json()["data"]
    assert old["offer_price"] == 142.25


def test_admin_row_restrictions_must_be_a_list_of_strings(admin_client, db):
    row = RowFactory()
    response = admin_client.post(
        f"/admin/catalog/row/{row.pk}/change/",
        {
            "section": row.section.pk,
            "name": row.name,
            "name_display": row.name_display,
            "available_quantity": 1,
            "offer_price": "10.00",
            "face_value": "10.00",
            "restrictions": '{"a": 1}',
        },
    )
    assert response.status_code == 200  # the form is shown again with the error
    assert "list of non-empty strings" in response.content.decode()


def test_admin_cancel_action_stops_new_quotes(admin_client, auth_client, event):
    selection = {"action": "cancel_events", "_selected_action": [event.pk]}
    confirmation = admin_client.post("/admin/catalog/event/", selection)
    assert 'data-testid="confirm-cancel-events"' in confirmation.content.decode()
    assert Event.objects.get(pk=event.pk).status == "scheduled"  # nothing before the confirmation
    response = post_confirmed(
        admin_client, "/admin/catalog/event/", {**selection, "confirmed": "yes", "reason": "The venue closed"}
    )
    assert response.status_code == 302
    event.refresh_from_db()
    assert event.status == "canceled" and event.canceled_at is not None
    body = {"event_id": event.event_id, "section_name": "Lower 101", "quantity": 1}
    assert_error(auth_client.post("/v1/quotes", body, format="json"), 422, "EVENT_EXPIRED")
    assert auth_client.get(f"/v1/events/{event.event_id}").json()["data"]["status"] == "canceled"


def test_admin_section_and_quote_pages_render(admin_client, partner, event):
    section = SectionFactory(event=event, name="Box 4/5")
    quote = quote_create(partner_pk=partner.pk, event_id=event.event_id, section_name="Floor GA", quantity=2)
    assert admin_client.get(f"/admin/catalog/event/{event.pk}/change/").status_code == 200
    assert admin_client.get(f"/admin/catalog/section/{section.pk}/change/").status_code == 200
    assert admin_client.get("/admin/quotes/quote/").status_code == 200
    page = admin_client.get("/admin/quotes/quote/", {"q": encode_quote_id(quote)}).content.decode()
    assert f"/admin/quotes/quote/{quote.pk}/change/" in page
    assert admin_client.get(f"/admin/quotes/quote/{quote.pk}/change/").status_code == 200
