"""The staff confirmation every admin change goes through, in a real browser (Debian's chromium): a partner
suspended from its page once, whatever staff do after (a reload, the same confirmation sent again).

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots).
"""

import os
from pathlib import Path

import pytest
from django.contrib.admin.models import LogEntry

from partners.models import Partner, PartnerStatusHistory
from tests.conftest import make_partner
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
REASON = "Chargebacks under review by the bank"


def test_a_suspension_confirmed_once_is_done_once_after_a_reload_and_a_resubmission(
    live_server,  # noqa: F811
    browser_page,  # noqa: F811
):
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    partner = make_partner(name="Harbourside Ticket Exchange").partner
    staff_sign_in(page, base)

    page_url = f"{base}/admin/partners/partner/{partner.pk}/change/"
    page.goto(page_url)
    page.click("#content-main .object-tools a:text-is('Suspend')")
    confirmation = page.locator("[data-testid=confirm-suspend]")
    assert partner.name in confirmation.locator("[data-testid=confirmation-objects]").inner_text()
    assert partner.public_id in confirmation.inner_text()
    page.click("input[value='Yes, suspend']")  # no reason yet: the browser asks for one
    assert Partner.objects.get(pk=partner.pk).status == "active"
    page.fill("#id_reason", REASON)
    page.screenshot(path=str(shots / "staff-confirmation-1280.png"), full_page=True)
    sent = page.eval_on_selector("form.staff-confirmation", "f => Object.fromEntries(new FormData(f))")
    confirm_url = page.url
    page.click("input[value='Yes, suspend']")
    page.wait_for_url(page_url)
    assert "is suspended" in page.locator("ul.messagelist").inner_text()

    page.reload()
    assert page.locator("ul.messagelist").count() == 0  # the GET after the redirect: nothing happens again
    history = page.locator("tr", has_text=REASON)
    assert history.count() == 1 and "suspended" in history.inner_text()
    page.screenshot(path=str(shots / "staff-confirmation-done-1280.png"), full_page=True)

    # The same confirmation sent again (the back button and "resubmit"): refused before it changes anything.
    again = page.request.post(confirm_url, form=sent, headers={"Referer": confirm_url})
    assert again.ok and "sent already" in again.text()
    assert [(h.to_status, h.reason) for h in PartnerStatusHistory.objects.filter(partner=partner)] == [
        ("suspended", REASON)
    ]
    assert (
        LogEntry.objects.filter(object_id=str(partner.pk), change_message__startswith="Suspended").count()
        == 1
    )
    page.reload()
    assert page.locator("tr", has_text=REASON).count() == 1
