"""Staff cancel an order from its admin page in a real browser (Debian's chromium): the button, the
confirmation with a reason, back on the order; a reload cancels nothing twice. The order list fits 1280 px.

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots).
"""

import os
from pathlib import Path

import pytest

from orders.models import Order, OrderStatusHistory
from payouts.models import Charge
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
REASON = "Seller sold the tickets elsewhere"


def _fits_the_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_cancel_from_the_order_page_once_and_the_list_fits_1280_px(live_server, browser_page):  # noqa: F811
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    partner = make_partner(name="Harbourside Ticket Exchange International").partner
    order = make_order(partner, status="awaiting_transfer", partner_reference="HX-2026-000417")
    make_order(partner, status="ticket_received", partner_reference="HX-2026-000418")
    assert Charge.objects.get(order=order).status == "succeeded"
    staff_sign_in(page, base)

    page.goto(f"{base}/admin/orders/order/")
    assert page.locator("#result_list tbody tr").count() == 2
    page.screenshot(path=str(shots / "order-list-1280.png"), full_page=True)
    assert _fits_the_width(page), page.evaluate("document.documentElement.scrollWidth")

    page_url = f"{base}/admin/orders/order/{order.pk}/change/"
    page.goto(page_url)
    page.screenshot(path=str(shots / "order-page-before-1280.png"))
    page.click("button:has-text('Cancel order')")
    confirmation = page.locator("[data-testid=confirm-cancel]")
    page.screenshot(path=str(shots / "order-cancel-confirmation-1280.png"), full_page=True)
    assert "refunded in full" in confirmation.inner_text() and order.order_id in confirmation.inner_text()
    page.fill("#id_reason", REASON)
    page.click("input[value='Yes, cancel this order']")
    page.wait_for_url(page_url)
    assert f"Canceled: {order.order_id}." in page.locator("ul.messagelist").inner_text()

    page.reload()
    assert page.locator("ul.messagelist").count() == 0  # the GET after the redirect: nothing happens again
    assert Order.objects.get(pk=order.pk).status == "canceled"
    canceled = OrderStatusHistory.objects.filter(order=order, to_status="canceled")
    assert [(row.actor, row.reason) for row in canceled] == [("staff:" + "boss@service.example", REASON)]
    assert page.get_by_text(REASON).count() == 1  # one history row with the reason
    assert page.locator("button:has-text('Cancel order')").count() == 0
    page.screenshot(path=str(shots / "order-page-1280.png"), full_page=True)
    assert _fits_the_width(page)


def test_mark_tickets_received_from_the_order_page_once(live_server, browser_page):  # noqa: F811
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    partner = make_partner(name="Harbourside Ticket Exchange").partner
    order = make_order(partner, status="awaiting_transfer", partner_reference="HX-2026-000512")
    staff_sign_in(page, base)

    page_url = f"{base}/admin/orders/order/{order.pk}/change/"
    page.goto(page_url)
    page.screenshot(path=str(shots / "order-mark-received-before-1280.png"))
    page.click("button:has-text('Mark tickets received')")
    confirmation = page.locator("[data-testid=confirm-mark-received]")
    page.screenshot(path=str(shots / "order-mark-received-confirmation-1280.png"), full_page=True)
    assert order.order_id in confirmation.inner_text() and "payout" in confirmation.inner_text()
    page.fill("#id_reason", "Tickets arrived in the transfer account")
    page.click("input[value='Yes, mark the tickets received']")
    page.wait_for_url(page_url)
    assert f"Marked ticket received: {order.order_id}." in page.locator("ul.messagelist").inner_text()

    page.reload()
    assert page.locator("ul.messagelist").count() == 0  # the GET after the redirect: nothing happens again
    received = OrderStatusHistory.objects.filter(order=order, to_status="ticket_received")
    assert [(row.actor, row.reason) for row in received] == [
        ("staff:boss@service.example", "Tickets arrived in the transfer account")
    ]
    assert page.get_by_text("Tickets arrived in the transfer account").count() == 1  # one history row
    assert page.locator("button:has-text('Mark tickets received')").count() == 0
    assert page.locator("button:has-text('Cancel order')").count() == 0  # received tickets are not canceled
    page.screenshot(path=str(shots / "order-mark-received-done-1280.png"), full_page=True)
