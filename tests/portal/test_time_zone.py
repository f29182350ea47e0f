"""The partner's time zone (Settings · Preferences) on every app's pages: each instant is shown in it, with the
zone's abbreviation and labelled as the partner's; an event's start is the venue's local date and time, as the
API, the CSV, the admin and the e-mails give it; the API stays in UTC."""

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from catalog.models import Event
from catalog.services import local_event_date
from orders.seller_mail import send_order_confirmation
from orders.webhooks.models import WebhookEndpoint
from partners.models import Partner
from tests.conftest import issue_token
from tests.portal.exports_data import csv_rows, order_at

pytestmark = pytest.mark.django_db

# 8 pm in New York on Nov 27 is Nov 28 in UTC (01:00) and in Berlin (02:00): one date, the venue's, everywhere.
NEW_YORK_EVENING = datetime(2026, 11, 28, 1, 0, tzinfo=UTC)
VENUE_START = "Nov 27, 2026 20:00 EST"


@pytest.fixture(autouse=True)
def _a_week_before_the_evening(time_machine):
    """The pages' own "today" (the admin's date filter, the dashboard's coming events) is a day of this module's
    clock, not of the calendar the suite happens to run on: after the orders below, before the evening."""
    time_machine.move_to(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))


def test_pages_show_times_in_the_partner_zone_and_the_api_stays_utc(ready_portal):
    order = order_at(ready_portal.partner, datetime(2026, 1, 15, 15, 0, tzinfo=UTC), partner_reference="TZ")
    client = ready_portal.client
    assert "Jan 15, 2026 15:00 UTC" in client.get("/portal/orders").content.decode()

    client.post("/portal/settings/preferences", {"time_zone": "America/Los_Angeles"})
    for path in ("/portal/orders", f"/portal/orders/{order.order_id}"):
        body = client.get(path).content.decode()
        assert "Jan 15, 2026 07:00 PST" in body, path
        assert "15:00 UTC" not in body
    assert "Jan 15, 07:00 PST" in client.get("/portal/").content.decode()

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(api, ready_portal.creds)}")
    data = api.get(f"/v1/orders/{order.order_id}").json()["data"]
    assert data["created_at"] == "2026-01-15T15:00:00Z"


def _order_for_a_new_york_evening(partner):
    order = order_at(partner, datetime(2026, 11, 20, 13, 2, tzinfo=UTC), partner_reference="NYC")
    Event.objects.filter(pk=order.event_id).update(
        starts_at=NEW_YORK_EVENING,
        timezone="America/New_York",
        event_date=local_event_date(starts_at=NEW_YORK_EVENING, tz_name="America/New_York"),
    )
    order.refresh_from_db()
    return order


def _shown_event_starts(body: str) -> list[str]:
    return re.findall(r'data-testid="event-start">([^<]*)<', body)


def test_an_event_is_dated_in_its_venue_zone_on_every_page_whatever_the_partner_zone(ready_portal):
    order = _order_for_a_new_york_evening(ready_portal.partner)
    client = ready_portal.client
    client.post("/portal/settings/preferences", {"time_zone": "Europe/Berlin"})

    for path in ("/portal/orders", "/portal/"):
        body = client.get(path).content.decode()
        assert _shown_event_starts(body) == [VENUE_START], path
        assert "Nov 28, 2026" not in body, path
        # The instants that are the partner's say so.
        assert "Created <span" in body and "(your time)" in body, path
        assert "Nov 20" in body and "14:02 CET" in body, path

    detail = client.get(f"/portal/orders/{order.order_id}").content.decode()
    assert _shown_event_starts(detail) == [
        f"{order.event.name} · {VENUE_START} (venue time, America/New_York)"
    ]
    assert "Nov 28, 2026" not in detail
    assert re.search(
        r'data-testid="order-created">Nov 20, 2026 14:02 CET <span[^>]*>\(your time, Europe/Berlin\)', detail
    )


def test_the_portal_the_csv_the_api_the_admin_and_the_email_give_the_event_one_date(ready_portal):
    order = _order_for_a_new_york_evening(ready_portal.partner)
    client = ready_portal.client
    client.post("/portal/settings/preferences", {"time_zone": "Asia/Tokyo"})
    assert _shown_event_starts(client.get("/portal/orders").content.decode()) == [VENUE_START]

    [row] = csv_rows(client.get("/portal/orders.csv"))
    assert row["event_date"] == "2026-11-27"

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(api, ready_portal.creds)}")
    event = api.get(f"/v1/events/{order.event.event_id}").json()["data"]
    assert (event["event_date"], event["event_datetime_local"]) == ("2026-11-27", "2026-11-27T20:00:00")

    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("staff", "staff@example.com", "x"))
    admin_list = staff.get("/admin/orders/order/").content.decode()
    assert "2026-11-27" in admin_list and "2026-11-28" not in admin_list

    mail.outbox.clear()
    send_order_confirmation(order=order, to="seller@example.com")
    assert "Friday, November 27, 2026 at 8:00 PM (local time, America/New_York)" in mail.outbox[0].body


def test_a_zone_the_tz_database_no_longer_knows_falls_back_to_utc(ready_portal):
    # Written behind the validation's back, as if a later tz database had dropped the name.
    Partner.objects.filter(pk=ready_portal.partner.pk).update(time_zone="Gone/Away")
    order_at(ready_portal.partner, datetime(2026, 1, 15, 15, 0, tzinfo=UTC))
    response = ready_portal.client.get("/portal/orders")
    assert response.status_code == 200
    assert "Jan 15, 2026 15:00 UTC" in response.content.decode()


def test_webhook_pages_label_their_times_as_the_partner_zone(ready_portal):
    client = ready_portal.client
    client.post("/portal/settings/preferences", {"time_zone": "Europe/Berlin"})
    client.post("/portal/settings/webhooks/add", {"url": "http://127.0.0.1:9/hook", "event_types": ["*"]})
    endpoint = WebhookEndpoint.objects.get(partner=ready_portal.partner)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(created_at=datetime(2026, 1, 15, 15, 0, tzinfo=UTC))

    listed = client.get("/portal/settings/webhooks/").content.decode()
    assert "Created (your time)" in listed and "Jan 15, 2026 16:00 CET" in listed
    detail = client.get(f"/portal/settings/webhooks/{endpoint.endpoint_id}").content.decode()
    assert re.search(
        r'data-testid="endpoint-created">Jan 15, 2026 16:00 CET <span[^>]*>\(your time, Europe/Berlin\)',
        detail,
    )
    # As a word: a page's random CSRF tokens may hold the letters.
    assert not re.search(r"\bUTC\b", listed + detail)
