"""Dashboard, API credentials, orders and payouts pages; partner isolation, CSRF and security headers."""

from decimal import Decimal

import pytest
from django.test import Client
from rest_framework.test import APIClient

from payouts.models import Payout
from payouts.services.progression import payouts_progress
from tests.conftest import assert_error, issue_token
from tests.payouts.factories import make_order

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_dashboard_checklist_for_a_new_partner(portal):
    body = portal.client.get("/portal/").content.decode()
    assert 'data-testid="check-payout_method" data-done="false"' in body
    assert 'data-testid="check-credit_card" data-done="false"' in body
    assert "PAYOUT_METHOD_NOT_CONFIGURED" in body
    assert "2 steps left" in body


def test_dashboard_checklist_complete_with_recent_orders(ready_portal):
    order = make_order(ready_portal.partner, status="awaiting_transfer", partner_reference="my-ref-77")
    body = ready_portal.client.get("/portal/").content.decode()
    assert 'data-testid="check-payout_method" data-done="true"' in body
    assert 'data-testid="check-credit_card" data-done="true"' in body
    assert "Your account is ready to sell." in body
    assert order.order_id in body and "my-ref-77" in body


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


def test_orders_list_filters(ready_portal):
    waiting = make_order(ready_portal.partner, status="awaiting_transfer", partner_reference="REF-A")
    canceled = make_order(ready_portal.partner, status="canceled", partner_reference="REF-B")
    client = ready_portal.client
    body = client.get("/portal/orders").content.decode()
    assert waiting.order_id in body and canceled.order_id in body
    body = client.get("/portal/orders", {"status": "canceled"}).content.decode()
    assert canceled.order_id in body and waiting.order_id not in body
    body = client.get("/portal/orders", {"q": "ref-a"}).content.decode()
    assert waiting.order_id in body and canceled.order_id not in body
    body = client.get("/portal/orders", {"q": canceled.order_id}).content.decode()
    assert canceled.order_id in body and waiting.order_id not in body
    body = client.get(
        "/portal/orders", {"created_from": "2000-01-01", "created_to": "2000-01-02"}
    ).content.decode()
    assert "No orders match these filters." in body
    assert client.get("/portal/orders", {"status": "bogus"}).status_code == 200


def test_order_detail_shows_history_charge_and_payout(ready_portal, settings):
    order = make_order(
        ready_portal.partner, status="ticket_received", quantity=2, offer_price=Decimal("60.00")
    )
    payouts_progress()
    body = ready_portal.client.get(f"/portal/orders/{order.order_id}").content.decode()
    assert "Payout in process" in body
    assert "$120.00" in body
    for status in ("accepted", "awaiting_transfer", "ticket_received", "payout_in_process"):
        assert f">{status}<" in body
    assert "Sandbox Test Bank ••••6789 (ACH)" in body


def test_payouts_list_with_state_filter(ready_portal):
    order = make_order(ready_portal.partner, status="ticket_received")
    payouts_progress()
    body = ready_portal.client.get("/portal/payouts").content.decode()
    assert order.order_id in body and "In process" in body
    assert (
        order.order_id not in ready_portal.client.get("/portal/payouts", {"status": "paid"}).content.decode()
    )


# --- isolation: partner A never sees partner B ----------------------------------------------------------------
PAGES = [
    "/portal/",
    "/portal/orders",
    "/portal/payouts",
    "/portal/settings/payment-methods",
    "/portal/settings/api-credentials",
    "/portal/settings/preferences",
    "/portal/statements",
]


@pytest.fixture
def two_partners(ready_portal, other_portal):
    mine = make_order(ready_portal.partner, status="ticket_received", partner_reference="MINE-1")
    theirs = make_order(other_portal.partner, status="ticket_received", partner_reference="THEIRS-1")
    payouts_progress()
    return mine, theirs


@pytest.mark.parametrize("path", PAGES)
def test_every_page_shows_only_the_own_partner(ready_portal, other_portal, two_partners, path):
    mine, theirs = two_partners
    body = ready_portal.client.get(path).content.decode()
    assert other_portal.partner.name not in body
    assert other_portal.partner.public_id not in body
    assert other_portal.creds.client_id not in body
    assert theirs.order_id not in body and "THEIRS-1" not in body
    other_account = other_portal.partner.payout_account
    assert other_account.platform_account_id not in body


def test_order_detail_of_another_partner_is_not_found(ready_portal, two_partners):
    _, theirs = two_partners
    assert ready_portal.client.get(f"/portal/orders/{theirs.order_id}").status_code == 404
    assert ready_portal.client.get("/portal/orders/ord_doesnotexist").status_code == 404


def test_orders_search_cannot_reach_another_partner(ready_portal, two_partners):
    _, theirs = two_partners
    for q in (theirs.order_id, "THEIRS-1"):
        body = ready_portal.client.get("/portal/orders", {"q": q}).content.decode()
        assert f"/portal/orders/{theirs.order_id}" not in body  # (the search box echoes the query itself)
        assert "No orders match these filters." in body


def test_payment_method_changes_touch_only_the_own_partner(ready_portal, other_portal):
    from .conftest import connect_payout_account

    before = other_portal.partner.payout_account.platform_account_id
    connect_payout_account(ready_portal.client, account_number="55554444")
    other_portal.partner.payout_account.refresh_from_db()
    assert other_portal.partner.payout_account.platform_account_id == before
    assert (
        ready_portal.partner.payout_account.__class__.objects.get(partner=ready_portal.partner).last4
        == "4444"
    )


def test_rotation_touches_only_the_own_partner(ready_portal, other_portal):
    ready_portal.client.post("/portal/settings/api-credentials", {"password": PASSWORD})
    issue_token(APIClient(), other_portal.creds)


def test_payouts_of_another_partner_are_not_listed(ready_portal, two_partners):
    _, theirs = two_partners
    assert Payout.objects.filter(order=theirs).exists()
    for status in ("", "in_process"):
        body = ready_portal.client.get("/portal/payouts", {"status": status}).content.decode()
        assert theirs.order_id not in body


# --- CSRF and headers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/portal/settings/payment-methods/payout/connect", {}),
        ("/portal/settings/payment-methods/card/add", {}),
        ("/portal/settings/api-credentials", {"password": PASSWORD}),
        ("/portal/settings/preferences", {"time_zone": "Europe/Paris"}),
        ("/portal/logout", {}),
    ],
)
def test_forms_without_csrf_token_are_rejected(ready_portal, path, data):
    client = Client(enforce_csrf_checks=True)
    client.force_login(ready_portal.user)
    response = client.post(path, data)
    assert response.status_code == 403
    assert (
        ready_portal.partner.credential.__class__.objects.get(partner=ready_portal.partner).rotated_at is None
    )


def test_sign_in_without_csrf_token_is_rejected(portal):
    response = Client(enforce_csrf_checks=True).post(
        "/portal/login", {"username": "alice@acme.example", "password": PASSWORD}
    )
    assert response.status_code == 403


def test_sandbox_forms_without_csrf_token_are_rejected(portal):
    client = Client(enforce_csrf_checks=True)
    client.force_login(portal.user)
    page = client.get("/portal/settings/payment-methods")
    token = page.cookies["csrftoken"].value if "csrftoken" in page.cookies else None
    start = client.post("/portal/settings/payment-methods/card/add", {"csrfmiddlewaretoken": token or ""})
    assert start.status_code == 302
    refused = client.post(
        start["Location"], {"holder_name": "A", "number": "4242424242424242", "expiry": "12/34", "cvc": "123"}
    )
    assert refused.status_code == 403


@pytest.mark.parametrize("path", [*PAGES, "/portal/login", "/sandbox/"])
def test_security_headers(ready_portal, path):
    client = Client() if path == "/portal/login" else ready_portal.client
    response = client.get(path)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "form-action 'self'" in csp
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert "no-store" in response["Cache-Control"] or "no-cache" in response["Cache-Control"]


def test_stripe_origins_are_allowed_as_form_targets(ready_portal, settings):
    settings.PAYMENT_PLATFORM = "stripe"
    settings.STRIPE_SECRET_KEY = "sk_test_x"
    settings.STRIPE_CONNECT_CLIENT_ID = "ca_x"
    csp = ready_portal.client.get("/portal/")["Content-Security-Policy"]
    assert "form-action 'self' https://connect.stripe.com https://checkout.stripe.com;" in csp


def test_session_and_csrf_cookies_are_secure_in_production():
    import subprocess
    import sys

    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup();"
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY)"
    )
    env = {
        "DJANGO_ENV": "production",
        "SECRET_KEY": "x" * 50,
        "TOKEN_SIGNING_KEY": "t",
        "QUOTE_ENCRYPTION_KEY": "q",
        "ALLOWED_HOSTS": "portal.example",
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
