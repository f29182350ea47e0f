"""Settings · Preferences: the partner's time zone. The portal shows every time in it, with the zone's
abbreviation, and its date filters mean that zone's days; the API stays in UTC."""

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from partners.models import Partner
from tests.conftest import issue_token

from .exports_data import order_at

pytestmark = pytest.mark.django_db


def test_a_new_partner_sees_utc(ready_portal):
    assert ready_portal.partner.time_zone == "UTC"
    body = ready_portal.client.get("/portal/settings/preferences").content.decode()
    assert '<option value="UTC" selected>UTC</option>' in body
    assert '<option value="America/New_York">America/New York</option>' in body


def test_choosing_a_zone_redirects_and_a_reload_repeats_nothing(ready_portal):
    response = ready_portal.client.post("/portal/settings/preferences", {"time_zone": "Asia/Kolkata"})
    assert response.status_code == 302 and response["Location"] == "/portal/settings/preferences"
    assert Partner.objects.get(pk=ready_portal.partner.pk).time_zone == "Asia/Kolkata"
    body = ready_portal.client.get(response["Location"]).content.decode()
    assert "Times are now shown in Asia/Kolkata." in body
    assert '<option value="Asia/Kolkata" selected>' in body
    assert "IST</strong> (Asia/Kolkata)" in body  # the current time, with the zone's abbreviation


@pytest.mark.parametrize("value", ["Mars/Olympus_Mons", "", "EST5EDT ", "../../etc/passwd", "utc"])
def test_an_unknown_zone_is_refused_and_nothing_changes(ready_portal, value):
    response = ready_portal.client.post("/portal/settings/preferences", {"time_zone": value})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Select a valid choice." in body or "This field is required." in body
    assert Partner.objects.get(pk=ready_portal.partner.pk).time_zone == "UTC"


def test_the_service_refuses_an_unknown_zone_too(ready_portal):
    from django.core.exceptions import ValidationError

    from partners.portal_services import partner_time_zone_set

    with pytest.raises(ValidationError):
        partner_time_zone_set(partner=ready_portal.partner, time_zone="Nowhere/Land")
    assert Partner.objects.get(pk=ready_portal.partner.pk).time_zone == "UTC"


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


def test_date_filters_mean_days_in_the_partner_zone(ready_portal):
    # 03:00 UTC on Jan 16 is still Jan 15 in New York.
    order = order_at(ready_portal.partner, datetime(2026, 1, 16, 3, 0, tzinfo=UTC))
    client = ready_portal.client
    day = {"created_from": "2026-01-16", "created_to": "2026-01-16"}
    assert order.order_id in client.get("/portal/orders", day).content.decode()  # UTC: Jan 16
    client.post("/portal/settings/preferences", {"time_zone": "America/New_York"})
    assert order.order_id not in client.get("/portal/orders", day).content.decode()
    previous_day = {"created_from": "2026-01-15", "created_to": "2026-01-15"}
    assert order.order_id in client.get("/portal/orders", previous_day).content.decode()
    # The CSV streams after the view returned; its filter still means New York days.
    export = b"".join(client.get("/portal/orders.csv", day).streaming_content).decode()
    assert order.order_id not in export
    export = b"".join(client.get("/portal/orders.csv", previous_day).streaming_content).decode()
    assert order.order_id in export and "2026-01-15T22:00:00-05:00" in export


def test_a_zone_the_tz_database_no_longer_knows_falls_back_to_utc(ready_portal):
    # Written behind the validation's back, as if a later tz database had dropped the name.
    Partner.objects.filter(pk=ready_portal.partner.pk).update(time_zone="Gone/Away")
    order_at(ready_portal.partner, datetime(2026, 1, 15, 15, 0, tzinfo=UTC))
    response = ready_portal.client.get("/portal/orders")
    assert response.status_code == 200
    assert "Jan 15, 2026 15:00 UTC" in response.content.decode()
