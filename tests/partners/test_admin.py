"""Staff provisioning in the admin: the secret is shown once, on the page after saving, never again."""

import re

import pytest
from django.contrib.auth import get_user_model

from partners.models import Partner, PartnerCredential, TokenSession
from tests.confirming import post_confirmed
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
    assert response.status_code == 302
    response = staff_client.get(response["Location"])
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


def test_new_secrets_wait_for_their_page_in_the_session_only_sealed(staff_client):
    """Between the POST and the page that shows it, the secret sits in the session (a database row):
    sealed there like every stored copy of a secret shown once."""
    from django.contrib.sessions.models import Session

    response = staff_client.post(
        "/admin/partners/partner/add/", {"name": "Ticket Hub", "contact_email": "ops@hub.example"}
    )
    assert response.status_code == 302
    waiting = [str(session.get_decoded()) for session in Session.objects.all()]
    secret = _secret_in(staff_client.get(response["Location"]).content.decode())
    assert waiting and not [value for value in waiting if secret in value or secret[4:] in value]


def test_rotation_from_the_admin_needs_confirmation_and_revokes_tokens(
    staff_client, api_client, partner_creds
):
    token = issue_token(api_client, partner_creds)
    url = f"/admin/partners/partner/{partner_creds.partner.pk}/rotate/"
    confirm = staff_client.get(url)
    assert confirm.status_code == 200 and "Yes, rotate" in confirm.content.decode()
    assert api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200

    # The reason is required: a confirmation without one rotates nothing.
    again = post_confirmed(staff_client, url, {"confirmed": "yes", "reason": " "})
    assert again.status_code == 200 and "Give a reason" in again.content.decode()
    assert api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    response = post_confirmed(
        staff_client, url, {"confirmed": "yes", "reason": "secret leaked in a support ticket"}, follow=True
    )
    new_secret = _secret_in(response.content.decode())
    assert new_secret != partner_creds.client_secret
    assert partner_creds.client_id in response.content.decode()
    assert api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    # The session is in the table revoked, whether the batched writer had copied it from Redis or not.
    assert TokenSession.objects.filter(revoked_at__isnull=True).count() == 0
    assert TokenSession.objects.get().revoked_reason == "credentials rotated"


def test_suspend_and_reactivate_from_the_admin(staff_client, api_client, partner_creds):
    token = issue_token(api_client, partner_creds)
    pk = partner_creds.partner.pk
    response = post_confirmed(
        staff_client,
        f"/admin/partners/partner/{pk}/suspend/",
        {"confirmed": "yes", "reason": "unpaid invoices"},
    )
    assert response.status_code == 302
    partner = Partner.objects.get(pk=pk)
    assert partner.status == "suspended" and partner.suspended_reason == "unpaid invoices"
    response = api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403 and response.json()["error"]["code"] == "ACCOUNT_SUSPENDED"

    staff_client.post(f"/admin/partners/partner/{pk}/reactivate/")  # the confirmation: nothing yet
    assert Partner.objects.get(pk=pk).status == "suspended"
    post_confirmed(
        staff_client, f"/admin/partners/partner/{pk}/reactivate/", {"confirmed": "yes", "reason": "paid"}
    )
    assert Partner.objects.get(pk=pk).status == "active"
    assert issue_token(api_client, partner_creds)


def test_bulk_rotate_action_shows_each_new_secret(staff_client, partner_creds, other_partner_creds):
    selected = [partner_creds.partner.pk, other_partner_creds.partner.pk]
    confirm = staff_client.post(
        "/admin/partners/partner/", {"action": "rotate_credentials_action", "_selected_action": selected}
    )
    # First a confirmation page: nothing is rotated yet.
    assert confirm.status_code == 200 and "Yes, rotate" in confirm.content.decode()
    assert not PartnerCredential.objects.filter(rotated_at__isnull=False).exists()
    response = post_confirmed(
        staff_client,
        "/admin/partners/partner/",
        {
            "action": "rotate_credentials_action",
            "_selected_action": selected,
            "confirmed": "yes",
            "reason": "yearly rotation",
        },
        follow=True,
    )
    html = response.content.decode()
    assert len(re.findall(r'class="client-secret">sec_', html)) == 2
    assert PartnerCredential.objects.filter(rotated_at__isnull=False).count() == 2


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


def test_reloading_the_secret_page_after_a_rotation_neither_rotates_nor_shows_it_again(
    staff_client, api_client, partner_creds
):
    url = f"/admin/partners/partner/{partner_creds.partner.pk}/rotate/"
    posted = post_confirmed(staff_client, url, {"confirmed": "yes", "reason": "yearly rotation"})
    assert posted.status_code == 302  # the action answers with a redirect: a reload repeats only the GET
    first = staff_client.get(posted["Location"])
    secret = _secret_in(first.content.decode())
    rotated_at = PartnerCredential.objects.get(partner=partner_creds.partner).rotated_at

    reload = staff_client.get(posted["Location"])
    html = reload.content.decode()
    assert reload.status_code == 200 and 'id="secrets-already-shown"' in html
    assert secret not in html and "client-secret" not in html
    assert PartnerCredential.objects.get(partner=partner_creds.partner).rotated_at == rotated_at
    # The secret shown once still works: the reload did not rotate it away.
    assert issue_token(
        api_client, type(partner_creds)(partner_creds.partner, partner_creds.client_id, secret)
    )


def test_reloading_after_adding_a_partner_creates_one_partner(staff_client):
    posted = staff_client.post(
        "/admin/partners/partner/add/", {"name": "Once Only", "contact_email": "ops@once.example"}
    )
    assert posted.status_code == 302
    staff_client.get(posted["Location"])
    staff_client.get(posted["Location"])
    assert Partner.objects.filter(name="Once Only").count() == 1


def test_staff_actions_and_their_reasons_are_in_the_audit_list(staff_client, partner_creds):
    pk = partner_creds.partner.pk
    post_confirmed(
        staff_client,
        f"/admin/partners/partner/{pk}/suspend/",
        {"confirmed": "yes", "reason": "chargebacks under review"},
    )
    post_confirmed(
        staff_client, f"/admin/partners/partner/{pk}/rotate/", {"confirmed": "yes", "reason": "secret leaked"}
    )
    listing = staff_client.get("/admin/admin/logentry/?q=Acme").content.decode()
    assert "Suspended: chargebacks under review" in listing
    assert "Rotated credentials: secret leaked" in listing
    assert "staff" in listing
    # Read-only: nobody edits the audit trail.
    entry_id = re.search(r"/admin/admin/logentry/(\d+)/change/", listing)
    if entry_id:
        page = staff_client.get(f"/admin/admin/logentry/{entry_id.group(1)}/change/")
        assert 'type="submit" value="Save"' not in page.content.decode()


def test_bulk_suspend_needs_confirmation_and_keeps_the_reason(staff_client, partner_creds):
    pk = partner_creds.partner.pk
    staff_client.post("/admin/partners/partner/", {"action": "suspend_action", "_selected_action": [pk]})
    assert Partner.objects.get(pk=pk).status == "active"
    post_confirmed(
        staff_client,
        "/admin/partners/partner/",
        {"action": "suspend_action", "_selected_action": [pk], "confirmed": "yes", "reason": "fraud check"},
    )
    partner = Partner.objects.get(pk=pk)
    assert partner.status == "suspended" and partner.suspended_reason == "fraud check"
