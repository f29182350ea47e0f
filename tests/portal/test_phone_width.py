"""Every portal page at a phone's width (390 × 844): the page itself never scrolls sideways; wide tables
scroll inside their own container, long ids and secrets wrap, the navigation scrolls inside itself.

One test drives every page: only one test per module can use the live server reliably today.
Screenshots of each page at 390 px and 1280 px go to ``PORTAL_SCREENSHOTS`` (default /tmp/portal-shots).
"""

import os
from pathlib import Path

import pytest

from partners.portal_services import portal_user_invite
from payouts.services.progression import payouts_progress
from tests.conftest import make_partner
from tests.orders.factories import make_order

from .test_browser import browser_page, live_server  # noqa: F401 - fixtures shared with the setup test

EMAIL, PASSWORD = "phone@narrow.example", "phone width test 390"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
OVERFLOW = """() => ({
    scroll: document.documentElement.scrollWidth,
    inner: window.innerWidth,
    wide: [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                     && !e.closest('.table-wrap') && !e.closest('.nav-inner'))
        .slice(0, 5).map(e => e.tagName + '.' + e.className),
})"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_portal_page_fits_a_phone(live_server, browser_page):  # noqa: F811
    page = browser_page
    base = live_server.url
    shots = Path(os.getenv("PORTAL_SCREENSHOTS", "/tmp/portal-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    creds = make_partner(name="Narrow Screen Tickets International", email="ops@narrow.example")
    portal_user_invite(partner=creds.partner, email=EMAIL, password=PASSWORD)
    creds.partner.time_zone = "America/Argentina/ComodRivadavia"  # a long zone name
    creds.partner.save()
    order = make_order(creds.partner, status="ticket_received", partner_reference="X" * 64)
    make_order(
        creds.partner, status="canceled", partner_reference="a-rather-long-reference-without-spaces-0001"
    )
    payouts_progress()

    def check(name: str) -> None:
        page.set_viewport_size(PHONE)
        page.wait_for_load_state("load")
        found = page.evaluate(OVERFLOW)
        assert found["scroll"] <= found["inner"], (name, found)
        page.screenshot(path=str(shots / f"{name}-390.png"), full_page=True)
        page.set_viewport_size(DESKTOP)
        page.screenshot(path=str(shots / f"{name}-1280.png"), full_page=True)
        page.set_viewport_size(PHONE)

    page.set_viewport_size(PHONE)
    page.goto(f"{base}/portal/login")
    check("login")
    page.goto(f"{base}/portal/password-reset")
    check("password-reset")
    page.goto(f"{base}/portal/login")
    page.fill("input[name=username]", EMAIL)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/portal/")

    pages = {
        "dashboard": "/portal/",
        "orders": "/portal/orders",
        "order-detail": f"/portal/orders/{order.order_id}",
        "notifications": "/portal/notifications",
        "payouts": "/portal/payouts",
        "statement": "/portal/statements",
        "payment-methods": "/portal/settings/payment-methods",
        "api-credentials": "/portal/settings/api-credentials",
        "preferences": "/portal/settings/preferences",
        "sign-in-security": "/portal/2fa/setup/",
    }
    for name, path in pages.items():
        page.goto(base + path)
        assert page.url == base + path, (name, page.url)
        check(name)

    # A freshly rotated secret (a long unbroken string) is shown once: it wraps too.
    page.goto(f"{base}/portal/settings/api-credentials")
    page.fill("input[name=password]", PASSWORD)
    page.click("button:has-text('Rotate secret')")
    page.wait_for_selector("[data-testid=client-secret]")
    check("api-credentials-new-secret")

    # The navigation scrolls inside itself and still reaches its last link.
    nav = page.evaluate(
        "() => { const n = document.querySelector('.nav-inner'); return [n.scrollWidth, n.clientWidth]; }"
    )
    assert nav[0] > nav[1]  # wider than the phone: it scrolls, the page does not
    page.click("nav >> text=Settings · Preferences")
    page.wait_for_url(f"{base}/portal/settings/preferences")
