"""Every portal page, whichever app it belongs to: partner isolation, CSRF and security headers."""

import pytest
from django.test import Client

from tests.portal.fixtures import PASSWORD

pytestmark = pytest.mark.django_db


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
        "PAYMENT_PLATFORM": "sandbox",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/unused",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "MEDIA_SHARED": "true",
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
