"""The partner's time zone (Settings · Preferences) on every app's pages: each time is shown in it, with the
zone's abbreviation; the API stays in UTC."""

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from partners.models import Partner
from tests.conftest import issue_token
from tests.portal.exports_data import order_at

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


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


def test_a_zone_the_tz_database_no_longer_knows_falls_back_to_utc(ready_portal):
    # Written behind the validation's back, as if a later tz database had dropped the name.
    Partner.objects.filter(pk=ready_portal.partner.pk).update(time_zone="Gone/Away")
    order_at(ready_portal.partner, datetime(2026, 1, 15, 15, 0, tzinfo=UTC))
    response = ready_portal.client.get("/portal/orders")
    assert response.status_code == 200
    assert "Jan 15, 2026 15:00 UTC" in response.content.decode()
