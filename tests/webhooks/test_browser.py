"""Settings → Webhooks in Debian's chromium: add an endpoint, see its secret once, ping, rotate, disable.

Every POST of the page is followed by a reload, which must not repeat it (each POST redirects). Set
WEBHOOK_SCREENSHOT_DIR to keep a screenshot of each step.
"""

import os
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from orders.webhooks.models import WebhookAttempt, WebhookEndpoint
from partners.portal_services import portal_user_invite
from tests.conftest import make_partner
from tests.portal.test_browser import (  # noqa: F401  (fixture)
    _end_leftover_connections,
    browser_page,
    portal_sign_in,
)

EMAIL, PASSWORD = "hooks@acme.example", "browser test pass 4242"


@pytest.fixture
def live_server(settings, transactional_db):
    """The portal browser test's live server (see there), ended the same way."""
    from pytest_django.live_server_helper import LiveServer

    settings.MEDIA_URL = "/__live-server-media__/"
    server = LiveServer(os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost")
    yield server
    server.stop()
    _end_leftover_connections()


def _fresh_connections() -> None:
    """Start on new database connections: after the portal's browser test (which ends every connection to
    the test database when it finishes) this test was handed an ended connection from the pool."""
    from django.db import connection, connections

    connections.close_all()
    connection.close_pool()


def _shot(page, name: str) -> None:
    folder = os.environ.get("WEBHOOK_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_webhook_settings_in_a_browser(live_server, browser_page, receiver):  # noqa: F811
    page = browser_page
    base = live_server.url
    _fresh_connections()
    creds = make_partner(name="Acme Tickets", email="ops@acme.example")
    portal_user_invite(partner=creds.partner, email=EMAIL, password=PASSWORD)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)

    portal_sign_in(page, base, email=EMAIL, password=PASSWORD)
    page.click("nav >> text=Settings · Webhooks")
    page.wait_for_url(f"{base}/portal/settings/webhooks/")
    assert "No webhook endpoints yet." in page.inner_text("main")

    # Add an endpoint: the secret is shown once, and a reload does not show it (nor add a second endpoint).
    page.fill("#id_url", receiver.url())
    page.fill("#id_description", "Order sync")
    assert page.is_checked("input[name=event_types][value='*']")
    page.click("button:has-text('Add endpoint')")
    page.wait_for_url("**/secret")
    secret = page.inner_text("[data-testid=webhook-secret]").strip()
    assert secret.startswith("whsec_")
    _shot(page, "1-secret")
    page.reload()
    assert page.is_visible("[data-testid=secret-already-shown]")
    assert secret not in page.content()
    _shot(page, "2-secret-reloaded")
    assert WebhookEndpoint.objects.count() == 1

    # Ping: delivered once, verifiable with the secret shown; a reload sends nothing more.
    page.click("text=Go to the endpoint")
    page.click("button:has-text('Send a ping')")
    page.wait_for_selector("[data-testid=attempts]")
    assert "queued" in page.inner_text(".messages")
    page.reload()
    assert len(receiver.requests) == 1
    Webhook(secret).verify(receiver.requests[0].body, receiver.requests[0].headers)
    assert "Succeeded" in page.inner_text("[data-testid=attempts]")
    page.click("summary:has-text('Request body and response')")
    assert "webhook.ping" in page.inner_text("[data-testid=attempts]")
    _shot(page, "3-detail-after-ping")

    # Resend the ping from its row.
    page.click("[data-testid=attempts] button:has-text('Resend')")
    page.wait_for_selector(".messages")
    page.reload()
    assert len(receiver.requests) == 2
    assert WebhookAttempt.objects.count() == 2

    # Rotate: a new secret, shown once; deliveries carry both signatures meanwhile.
    page.select_option("#id_expire_previous_in_seconds", "3600")
    page.click("button:has-text('Rotate secret')")
    page.wait_for_url("**/secret")
    new_secret = page.inner_text("[data-testid=webhook-secret]").strip()
    assert new_secret.startswith("whsec_") and new_secret != secret
    page.reload()
    assert page.is_visible("[data-testid=secret-already-shown]")

    # Disable, then enable.
    page.click("text=Go to the endpoint")
    page.click("button:has-text('Disable')")
    page.wait_for_selector("button:has-text('Enable')")
    assert page.inner_text("[data-testid=endpoint-status]") == "Disabled"
    page.reload()
    assert WebhookEndpoint.objects.get().status == "disabled"
    _shot(page, "4-disabled")
    page.click("button:has-text('Enable')")
    page.wait_for_selector("button:has-text('Disable')")
    assert WebhookEndpoint.objects.get().status == "enabled"

    page.goto(f"{base}/portal/settings/webhooks/")
    _shot(page, "5-list")
    assert "Order sync" in page.inner_text("[data-testid=endpoints]")
    # Seven POSTs: sign-in, add, ping, resend, rotate, disable, enable (the reloads posted nothing).
    assert len([p for p in posts if "/portal/" in p]) == 7
