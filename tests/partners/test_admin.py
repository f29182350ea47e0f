"""Staff provisioning in the admin: the secret is shown once, on the page after saving, never again."""

import re

import pytest
from django.contrib.auth import get_user_model

from partners.models import Partner, PartnerCredential, TokenSession
from tests.conftest import issue_token

pytestmark = pytest.mark.urls("tests.config.urls_probe")


@pytest.fixture
def staff_client(client, db):
    user = get_user_model().objects.create_superuser("staff", "staff@buyback.example", "pw-for-tests-only")
    client.force_login(user)
    return client


def _secret_in(html: str) -> str:
    match = re.search(r'class="client-secret">(sec_[^<]+)<', html)
    assert match, "the page shows the new secret"
    return match.group(1)


def test_adding_a_partner_shows_the_secret_once(staff_client, api_client):
    response = staff_client.post(
        "/admin/partners/partner/add/", {"name": "Ticket Hub", "contact_email": "ops@hub.example"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    secret = _secret_in(html)
    partner = Partner.objects.get(name="Ticket Hub")
    credential = PartnerCredential.objects.get(partner=partner)
    assert credential.client_id in html
    assert secret not in credential.secret_digest
    assert "no-store" in response["Cache-Control"]

    change_page = staff_client.get(f"/admin/partners/partner/{partner.pk}/change/").content.decode()
    assert secret not in change_page
    assert credential.client_id in change_page
    assert f"sec_…{secret[-4:]}" in change_page
    listing = staff_client.get("/admin/partners/partner/").content.decode()
    assert secret not in listing

    # the shown secret works
    api_client.post(
        "/v1/auth/token",
        {"client_id": credential.client_id, "client_secret": secret, "grant_type": "client_credentials"},
        format="json",
    ).json()["data"]["access_token"]


def test_rotation_from_the_admin_needs_confirmation_and_revokes_tokens(
    staff_client, api_client, partner_creds
):
    token = issue_token(api_client, partner_creds)
    url = f"/admin/partners/partner/{partner_creds.partner.pk}/rotate/"
    confirm = staff_client.get(url)
    assert confirm.status_code == 200 and "Yes, rotate" in confirm.content.decode()
    assert TokenSession.objects.filter(revoked_at__isnull=True).count() == 1

    response = staff_client.post(url)
    new_secret = _secret_in(response.content.decode())
    assert new_secret != partner_creds.client_secret
    assert partner_creds.client_id in response.content.decode()
    assert api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    assert TokenSession.objects.filter(revoked_at__isnull=True).count() == 0


def test_suspend_and_reactivate_from_the_admin(staff_client, api_client, partner_creds):
    token = issue_token(api_client, partner_creds)
    pk = partner_creds.partner.pk
    response = staff_client.post(f"/admin/partners/partner/{pk}/suspend/", {"reason": "unpaid invoices"})
    assert response.status_code == 302
    partner = Partner.objects.get(pk=pk)
    assert partner.status == "suspended" and partner.suspended_reason == "unpaid invoices"
    response = api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403 and response.json()["error"]["code"] == "ACCOUNT_SUSPENDED"

    staff_client.post(f"/admin/partners/partner/{pk}/reactivate/")
    assert Partner.objects.get(pk=pk).status == "active"
    assert issue_token(api_client, partner_creds)


def test_bulk_rotate_action_shows_each_new_secret(staff_client, partner_creds, other_partner_creds):
    response = staff_client.post(
        "/admin/partners/partner/",
        {
            "action": "rotate_credentials_action",
            "_selected_action": [partner_creds.partner.pk, other_partner_creds.partner.pk],
        },
    )
    html = response.content.decode()
    assert len(re.findall(r'class="client-secret">sec_', html)) == 2


def test_partner_pages_show_readiness_and_sessions(staff_client, api_client, partner_creds):
    issue_token(api_client, partner_creds)
    html = staff_client.get(f"/admin/partners/partner/{partner_creds.partner.pk}/change/").content.decode()
    assert "ready" in html
    assert "tks_" in html
    listing = staff_client.get("/admin/partners/partner/?q=Acme").content.decode()
    assert partner_creds.client_id in listing


def test_non_staff_cannot_reach_the_rotation_page(client, partner_creds):
    response = client.post(f"/admin/partners/partner/{partner_creds.partner.pk}/rotate/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
