"""The portal's orders page by page and the staff's order list of a long table, in a real browser (Debian's
chromium): "Older →" and "← Newer" reach every order and a reload shows the same page; the admin finds an order
by its id and shows the estimated count of a long list.

Screenshots at 1280 px go to ``SCALE_SCREENSHOTS`` (default /tmp/scale-shots).
"""

import os
from pathlib import Path

import pytest

from config.core import admin_scale
from orders.models import Order
from partners.portal.paging import PAGE_SIZE
from partners.portal_services import portal_user_invite
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.exports_data import clone_orders
from tests.portal.test_browser import browser_page, live_server, portal_sign_in  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
EMAIL, PASSWORD = "pager@harbour.example", "browser test pass 4646"


def shots() -> Path:
    path = Path(os.getenv("SCALE_SCREENSHOTS", "/tmp/scale-shots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def listed(page) -> list[str]:
    return page.locator("table tbody tr td:first-child a.mono").all_inner_texts()


def test_the_portal_orders_page_by_page_and_back(live_server, browser_page):  # noqa: F811
    page, base = browser_page, live_server.url
    partner = make_partner(name="Harbourside Ticket Exchange").partner
    clone_orders(make_order(partner, status="awaiting_transfer"), PAGE_SIZE + 4)
    newest_first = list(Order.objects.order_by("-created_at", "-id").values_list("order_id", flat=True))
    portal_user_invite(partner=partner, email=EMAIL, password=PASSWORD)
    portal_sign_in(page, base, email=EMAIL, password=PASSWORD)

    page.goto(f"{base}/portal/orders")
    assert listed(page) == newest_first[:PAGE_SIZE]
    assert page.locator("[data-testid=pager-newer]").count() == 0
    page.screenshot(path=str(shots() / "portal-orders-first-1280.png"), full_page=True)
    page.click("[data-testid=pager-older]")
    page.wait_for_url("**/portal/orders?older=*")
    assert listed(page) == newest_first[PAGE_SIZE:]
    assert page.locator("[data-testid=pager-older]").count() == 0
    page.screenshot(path=str(shots() / "portal-orders-older-1280.png"), full_page=True)
    page.reload()
    assert listed(page) == newest_first[PAGE_SIZE:]
    page.click("[data-testid=pager-newer]")
    page.wait_for_url("**/portal/orders?newer=*")
    assert listed(page) == newest_first[:PAGE_SIZE]


def test_the_admin_finds_an_order_by_its_id_and_estimates_a_long_list(live_server, browser_page, monkeypatch):  # noqa: F811
    page, base = browser_page, live_server.url
    partner = make_partner(name="Harbourside Ticket Exchange").partner
    wanted = make_order(partner, status="awaiting_transfer", partner_reference="HX-2026-000417")
    make_order(partner, status="awaiting_transfer", partner_reference="HX-2026-000418")
    staff_sign_in(page, base)

    page.goto(f"{base}/admin/orders/order/")
    page.fill("#searchbar", wanted.order_id)
    page.press("#searchbar", "Enter")
    page.wait_for_url("**/admin/orders/order/?q=*")
    assert page.locator("#result_list tbody tr").count() == 1
    assert wanted.order_id in page.locator("#result_list").inner_text()
    page.screenshot(path=str(shots() / "admin-order-search-1280.png"), full_page=True)

    monkeypatch.setattr(admin_scale, "EXACT_COUNT_BELOW", 0)  # as if the list were long
    page.goto(f"{base}/admin/orders/order/")
    assert page.locator("#result_list tbody tr").count() == 2
    assert page.locator(".paginator .estimated-count").inner_text().startswith("about ")
    page.fill("#searchbar", "Harbourside")
    page.press("#searchbar", "Enter")
    page.wait_for_url("**/admin/orders/order/?q=*")
    assert page.locator("#changelist-search .quiet").inner_text().startswith("about ")
    page.screenshot(path=str(shots() / "admin-orders-estimated-1280.png"), full_page=True)
