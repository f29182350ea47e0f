"""Staff make StagePass's template in a real browser (Debian's chromium), from an unparsed case to the order
received: the proposals from the mail, the test over the stored mail, an activation refused for the one
message staff dismissed (StagePass's cancel notice, which the first subject pattern took for an offer), the
pattern corrected, tested again and activated; the case is processed again and the order is
``ticket_received``. Every POST is followed by a reload that does nothing twice. A view-only member sees the
versions and no button.

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots); docs/staff-guide/ keeps
smaller copies of some.
"""

import os
import re
import time
from pathlib import Path

import pytest
from django.contrib.admin.models import LogEntry

from orders.models import Order
from orders.transfers.decision.state import case_move
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

from .conftest import STAFF_PASSWORD, staff

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
V = PlatformTemplateVersion
FIXED_SUBJECT = r"^Ticket transfer: \d+ tickets? for [^—]+$"


def _shots() -> Path:
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def sign_in(page, base: str, username: str) -> None:
    page.goto(base + "/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(base + "/admin/")


def confirm(page, reason: str, submit: str) -> None:
    page.fill("#id_reason", reason)
    page.click(f"input[value='{submit}']")


def save_draft(page, reason: str) -> None:
    """The learn page's "Save as a draft version" with ``reason``: the draft's test opens."""
    page.fill("#id_reason", reason)
    page.click("button[value=save]")
    page.wait_for_url(re.compile(r".*/platformtemplateversion/\d+/test/$"))


def activate(page, base: str, pk: int, *, button: str, reason: str) -> str:
    """Press ``button`` (an Activate) and confirm with ``reason``: the message on the version's page, which a
    reload no longer shows (nothing happens twice)."""
    page.click(f"button:has-text('{button}')")
    confirm(page, reason, "Yes, activate")
    page.wait_for_url(f"{base}/admin/transfers/platformtemplateversion/{pk}/change/")
    said = page.inner_text("ul.messagelist")
    page.reload()
    assert page.locator("ul.messagelist").count() == 0
    return said


def fits_the_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def eventually(check, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.1)


def test_staff_make_test_and_activate_a_template_and_the_order_is_received(
    live_server,  # noqa: F811
    browser_page,  # noqa: F811
    shop,
):
    page, base, shots = browser_page, live_server.url, _shots()
    staff("alice@service.example", "manage_platform_templates", "resolve_transfer_case")
    learned_order, canceled_order = shop.order(), shop.order()
    canceled = shop.unparsed(canceled_order, canceled=True)
    case_move(
        case=canceled,
        to="resolved",
        actor="staff:carol@service.example",
        reason="StagePass's cancel notice: the seller took the tickets back",
        resolution="dismissed",
    )
    case = shop.unparsed(learned_order)
    sign_in(page, base, "alice@service.example")

    case_url = f"{base}/admin/transfers/transfercase/{case.pk}/change/"
    page.goto(case_url)
    assert "No template for the platform 'stagepass'" in page.content()
    page.screenshot(path=str(shots / "template-case-1280.png"), full_page=True)
    page.click("[data-testid=learn-template]")
    page.wait_for_url(re.compile(r".*/learn/\d+/$"))
    assert page.locator("[data-testid=mail-lines] li").nth(7).inner_text() == "Skyline Festival"
    reads = {
        row.get_attribute("data-field"): row.locator(".reads").inner_text()
        for row in page.locator("[data-testid=proposals] tbody tr").all()
    }
    assert (reads["event"], reads["section"], reads["row"], reads["seats"], reads["quantity"]) == (
        "Skyline Festival",
        "101",
        "A",
        "1, 2",
        "2",
    )
    assert reads["accept_link"].startswith("https://accept.stagepass-tickets.com/claim/")
    page.screenshot(path=str(shots / "template-learn-1280.png"), full_page=True)
    assert fits_the_width(page)

    save_draft(page, f"StagePass transfer offers, from case #{case.pk}")
    first = V.objects.get(platform="stagepass", state="draft")
    assert "1 would be received automatically against a different staff outcome" in page.inner_text(
        "[data-testid=trial-summary]"
    )
    disagreeing = page.locator("[data-testid=trial] tr.disagrees")
    assert disagreeing.count() == 1 and "dismissed" in disagreeing.inner_text()
    assert page.locator("[data-testid=cannot-activate]").count() == 1
    page.screenshot(path=str(shots / "template-test-refused-1280.png"), full_page=True)
    assert fits_the_width(page)
    page.reload()  # the test is read-only: reloading it changes nothing
    assert V.objects.filter(platform="stagepass").count() == 2

    # The version page's Activate: confirmed with a reason, refused, and nothing is in force.
    page.goto(f"{base}/admin/transfers/platformtemplateversion/{first.pk}/change/")
    said = activate(page, base, first.pk, button="Activate", reason="Try it")
    assert "against a different staff outcome" in said
    first.refresh_from_db()
    assert first.state == "draft" and Order.objects.get(pk=learned_order.pk).status == "awaiting_transfer"

    # The fix, from the case again: the subject of an offer never carries "— canceled".
    page.goto(case_url)
    page.click("[data-testid=learn-template]")
    page.fill("#id_subject_pattern", FIXED_SUBJECT)
    with page.expect_navigation():  # the preview posts to the page's own address: wait for its answer
        page.click("button[value=preview]")
    assert "recognises this subject" in page.content()
    save_draft(page, "An offer's subject ends with the event, never with “canceled”")
    second = V.objects.get(platform="stagepass", state="draft", version=first.version + 1)
    assert "0 would be received automatically" in page.inner_text("[data-testid=trial-summary]")
    assert (
        page.locator(f"[data-testid=trial] tr[data-message='{canceled.message_id}']").get_attribute(
            "data-would"
        )
        == "unparsed"
    )
    page.screenshot(path=str(shots / "template-test-passes-1280.png"), full_page=True)
    with page.expect_navigation():
        page.click("button:has-text('Activate this version')")
    assert "Put this version in force?" in page.content()
    page.screenshot(path=str(shots / "template-activate-confirm-1280.png"), full_page=True)
    confirm(page, "Tested: no disagreement", "Yes, activate")
    page.wait_for_url(f"{base}/admin/transfers/platformtemplateversion/{second.pk}/change/")
    assert "Activate: stagepass version" in page.inner_text("ul.messagelist")
    page.reload()
    assert page.locator("ul.messagelist").count() == 0
    page.screenshot(path=str(shots / "template-version-active-1280.png"), full_page=True)

    eventually(lambda: Order.objects.get(pk=learned_order.pk).status == "ticket_received")
    order = Order.objects.get(pk=learned_order.pk)
    assert (order.transfer.state, order.transfer.source) == ("detected", "email")
    assert order.status_history.filter(to_status="ticket_received").count() == 1
    case.refresh_from_db()
    assert case.state == "resolved" and case.details["decided_by"]["template_version"] == second.version
    assert Order.objects.get(pk=canceled_order.pk).status == "awaiting_transfer"
    assert (
        LogEntry.objects.filter(object_id=str(second.pk), change_message__startswith="Activate").count() == 1
    )
    page.goto(case_url)
    assert page.locator("[data-testid=learn-template]").count() == 0  # resolved: nothing left to learn
    page.goto(f"{base}/admin/transfers/platformtemplateversion/")
    report = page.locator("[data-testid=platform-report] tr[data-platform=stagepass]").inner_text()
    assert f"v{second.version}" in report
    page.screenshot(path=str(shots / "template-report-1280.png"), full_page=True)
    assert TransferCase.objects.filter(kind="unparsed", state="open").count() == 0


def test_a_view_only_member_sees_the_versions_and_no_button(live_server, browser_page, shop):  # noqa: F811
    page, base = browser_page, live_server.url
    case = shop.unparsed(shop.order())
    staff("support@service.example")
    sign_in(page, base, "support@service.example")
    version = V.objects.get(platform="stagepass", state="active")
    page.goto(f"{base}/admin/transfers/platformtemplateversion/{version.pk}/change/")
    assert "sender domains" in page.content().lower()
    assert page.locator("form.version-step").count() == 0
    assert page.locator("text=Test against the stored mail").count() == 0
    page.goto(f"{base}/admin/transfers/transfercase/{case.pk}/change/")
    assert page.locator("[data-testid=learn-template]").count() == 0
    response = page.goto(f"{base}/admin/transfers/platformtemplateversion/learn/{case.pk}/")
    assert response.status == 403
