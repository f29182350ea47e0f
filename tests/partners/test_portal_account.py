"""The portal's account pages: API credentials (rotation shows the new secret once) and preferences (the time
zone every time is shown in)."""

import pytest
from rest_framework.test import APIClient

from partners.models import Partner
from tests.conftest import assert_error, issue_token
from tests.portal.fixtures import PASSWORD

pytestmark = pytest.mark.django_db


def test_api_credentials_page_shows_client_id_not_secret(ready_portal):
    body = ready_portal.client.get("/portal/settings/api-credentials").content.decode()
    assert ready_portal.creds.client_id in body
    assert ready_portal.creds.client_secret not in body
    assert f"sec_…{ready_portal.creds.client_secret[-4:]}" in body


def test_rotation_needs_the_password(ready_portal):
    response = ready_portal.client.post("/portal/settings/api-credentials", {"password": "wrong"})
    assert response.status_code == 400
    assert "The password is not correct." in response.content.decode()
    issue_token(APIClient(), ready_portal.creds)  # the old secret still works


def test_rotation_shows_the_new_secret_once_and_revokes_old_tokens(ready_portal):
    api = APIClient()
    old_token = issue_token(api, ready_portal.creds)
    posted = ready_portal.client.post("/portal/settings/api-credentials", {"password": PASSWORD})
    # POST → redirect → GET: reloading the page that shows the secret does not rotate it again.
    assert posted.status_code == 302 and posted["Location"] == "/portal/settings/api-credentials"
    response = ready_portal.client.get(posted["Location"])
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    body = response.content.decode()
    secret = body.split('data-testid="client-secret">')[1].split("<")[0]
    assert secret.startswith("sec_") and secret != ready_portal.creds.client_secret

    again = ready_portal.client.get("/portal/settings/api-credentials").content.decode()
    assert secret not in again  # shown once

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {old_token}")
    assert_error(api.get("/v1/events"), 401, "UNAUTHORIZED")
    old = APIClient().post(
        "/v1/auth/token",
        {
            "client_id": ready_portal.creds.client_id,
            "client_secret": ready_portal.creds.client_secret,
            "grant_type": "client_credentials",
        },
        format="json",
    )
    assert_error(old, 401, "INVALID_CREDENTIALS")
    ready_portal.creds.client_secret = secret
    issue_token(APIClient(), ready_portal.creds)


def _token_request(creds):
    return APIClient().post(
        "/v1/auth/token",
        {
            "client_id": creds.client_id,
            "client_secret": creds.client_secret,
            "grant_type": "client_credentials",
        },
        format="json",
    )


def test_rotation_touches_only_the_own_partner(ready_portal, other_portal):
    own_token = issue_token(APIClient(), ready_portal.creds)
    other_token = issue_token(APIClient(), other_portal.creds)
    posted = ready_portal.client.post("/portal/settings/api-credentials", {"password": PASSWORD})
    assert posted.status_code == 302

    # The own partner's old secret and token are refused ...
    assert_error(_token_request(ready_portal.creds), 401, "INVALID_CREDENTIALS")
    own = APIClient()
    own.credentials(HTTP_AUTHORIZATION=f"Bearer {own_token}")
    assert_error(own.get("/v1/events"), 401, "UNAUTHORIZED")
    # ... the other partner's secret and token work as before.
    assert _token_request(other_portal.creds).status_code == 200
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {other_token}")
    assert other.get("/v1/events").status_code == 200


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
