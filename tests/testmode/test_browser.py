"""The portal's test mode in a real browser: the switch, the coloured banner, and the test order listed."""

from datetime import timedelta

import pytest

from partners.portal_services import portal_user_invite
from tests.orders.factories import RowFactory
from tests.portal.test_browser import _api, browser_page, live_server, portal_sign_in  # noqa: F401  (fixtures)

from .conftest import make_partner_with_both_pairs

EMAIL, PASSWORD = "owner@acme.example", "browser test pass 4242"
SCREENSHOT = "/tmp/portal-test-mode.png"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_portal_switches_to_test_mode_under_a_banner(live_server, browser_page):  # noqa: F811
    page, base = browser_page, live_server.url
    pairs = make_partner_with_both_pairs(payment_methods=False)
    portal_user_invite(partner=pairs.partner, email=EMAIL, password=PASSWORD)
    row = RowFactory(available_quantity=10)
    status, body = _api(
        base,
        "/v1/auth/token",
        body={
            "client_id": pairs.test.client_id,
            "client_secret": pairs.test.client_secret,
            "grant_type": "client_credentials",
        },
    )
    assert status == 200
    token = body["data"]["access_token"]
    status, body = _api(
        base,
        "/v1/quotes",
        token=token,
        body={"event_id": row.section.event.event_id, "section_name": row.section.name, "quantity": 2},
    )
    assert status == 201, body
    status, body = _api(
        base,
        "/v1/orders",
        token=token,
        form={
            "quote_id": body["data"]["quote_id"],
            "delivery_type": "mobile_transfer",
            "is_ready_to_deliver": "false",
            "in_hand_date": (row.section.event.event_date - timedelta(days=7)).isoformat(),
        },
    )
    assert status == 201, body
    order_id = body["data"]["order_id"]

    portal_sign_in(page, base, email=EMAIL, password=PASSWORD)
    page.goto(f"{base}/portal/orders")
    assert page.locator("[data-testid=test-mode-banner]").count() == 0
    assert page.locator(f"text={order_id}").count() == 0

    page.click("[data-testid=mode-switch] button")
    page.wait_for_url(f"{base}/portal/orders")
    banner = page.locator("[data-testid=test-mode-banner]")
    assert banner.is_visible()
    assert "test mode" in banner.inner_text().lower()
    assert page.locator(f"text={order_id}").count() == 1
    page.screenshot(path=SCREENSHOT, full_page=False)

    page.click("[data-testid=mode-switch] button")
    page.wait_for_url(f"{base}/portal/orders")
    assert page.locator("[data-testid=test-mode-banner]").count() == 0
