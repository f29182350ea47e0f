"""Staff work the "Transfers" queue in a real browser (Debian's chromium): a mismatch case is resolved with a
reason from its page, the reload does nothing twice; a view-only member sees the queue and no action; the
mail's HTML (a script, a tracking image) never runs nor loads.

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots).
"""

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from orders.models import Order
from orders.transfers.models import TransferCase, TransferCaseHistory
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

from .fixtures import HOSTILE_HTML, mismatch_case, transfer_mail

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
REASON = "Seller confirmed by phone: row B is the row sold"


def _shots() -> Path:
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _fits_the_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_staff_resolve_a_mismatch_once_and_the_mail_never_renders(live_server, browser_page):  # noqa: F811
    page, base, shots = browser_page, live_server.url, _shots()
    partner = make_partner(name="Harbourside Ticket Exchange").partner
    order = make_order(partner, status="awaiting_transfer", partner_reference="HX-2026-000733")
    case = mismatch_case(order, raw=transfer_mail(order, html=HOSTILE_HTML, text=False))
    other = make_order(partner, status="awaiting_transfer", partner_reference="HX-2026-000734")
    mismatch_case(other)
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    staff_sign_in(page, base)

    page.goto(f"{base}/admin/transfers/transfercase/")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2 and "Mismatch" in rows.first.inner_text()
    page.screenshot(path=str(shots / "transfer-queue-1280.png"), full_page=True)
    assert _fits_the_width(page)

    page_url = f"{base}/admin/transfers/transfercase/{case.pk}/change/"
    page.goto(page_url)
    mail_text = page.locator("[data-testid=mail-text] pre").inner_text()
    assert "Row: B" in mail_text and "Event: Skyline Festival" in mail_text
    assert page.evaluate("window.pwned") is None and page.title() != "pwned"
    assert not [url for url in requested if "tracker.invalid" in url]
    assert page.locator("[data-testid=evidence] td.bad").count() == 1
    assert "d=sandbox.invalid" in page.locator("[data-testid=auth-summary]").inner_text()
    page.screenshot(path=str(shots / "transfer-case-1280.png"), full_page=True)

    page.click("button:has-text('Mark tickets received')")
    confirmation = page.locator("[data-testid=confirm-mark_received]")
    assert order.order_id in confirmation.inner_text()
    assert "Were the tickets accepted on the platform?" in confirmation.inner_text()
    page.screenshot(path=str(shots / "transfer-confirmation-1280.png"), full_page=True)
    page.click("input[value='Yes, mark the tickets received']")  # no reason yet: the browser asks for one
    assert TransferCase.objects.get(pk=case.pk).state == "open"
    page.fill("#id_reason", REASON)
    page.click("input[value='Yes, mark the tickets received']")
    page.wait_for_url(page_url)
    assert "Case #" in page.locator("ul.messagelist").inner_text()

    page.reload()
    assert page.locator("ul.messagelist").count() == 0  # the GET after the redirect: nothing happens again
    resolved = TransferCaseHistory.objects.filter(case=case, to_status="resolved")
    assert [(h.actor, h.reason) for h in resolved] == [("staff:boss@service.example", REASON)]
    assert page.get_by_text(REASON).count() == 2  # the history row and the resolution's reason, once each
    order.refresh_from_db()
    assert (order.status, order.transfer.source) == ("ticket_received", "staff")
    assert order.status_history.filter(to_status="ticket_received").count() == 1
    assert page.locator("form.case-action").count() == 0  # resolved: no action left
    page.screenshot(path=str(shots / "transfer-case-resolved-1280.png"), full_page=True)


def test_a_view_only_member_sees_the_queue_and_no_action(live_server, browser_page):  # noqa: F811
    page, base, shots = browser_page, live_server.url, _shots()
    partner = make_partner(name="Harbourside Ticket Exchange").partner
    case = mismatch_case(make_order(partner, status="awaiting_transfer"))
    viewer = get_user_model().objects.create_user(
        "support@service.example", "support@service.example", "support browser pass 8080", is_staff=True
    )
    viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    page.goto(base + "/admin/login/")
    page.fill("#id_username", "support@service.example")
    page.fill("#id_password", "support browser pass 8080")
    page.click("input[type=submit]")
    page.wait_for_url(base + "/admin/")

    page.goto(f"{base}/admin/transfers/transfercase/")
    assert page.locator("#result_list tbody tr").count() == 1
    assert page.locator("select[name=action]").count() == 0
    page.screenshot(path=str(shots / "transfer-queue-viewer-1280.png"), full_page=True)
    page.goto(f"{base}/admin/transfers/transfercase/{case.pk}/change/")
    assert page.locator("[data-testid=mail-text]").count() == 1
    assert page.locator("form.case-action").count() == 0
    assert page.locator("input[name=_save]").count() == 0
    assert Order.objects.get(pk=case.order_id).status == "awaiting_transfer"
