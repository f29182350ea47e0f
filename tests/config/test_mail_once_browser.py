"""Staff's list of the e-mails sent once, in a real browser (Debian's chromium): a confirmation handed to the mail
server but never recorded is found with the "unconfirmed" filter, and its link opens the order it is about.

The screenshots go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots).
"""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from config.core import mail_once
from tests.orders.factories import confirmation_mail_set, make_order
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_staff_find_an_unconfirmed_confirmation_and_open_its_order(live_server, browser_page, partner):  # noqa: F811
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    sent, unconfirmed = make_order(partner), make_order(partner)
    now = timezone.now()
    confirmation_mail_set(sent, recipient="sent@example.org", claimed_at=now, handed_over_at=now, sent_at=now)
    handed = now - timedelta(minutes=10)
    # (The orders' own confirmation ran on commit here: the record is rewritten as a sender left it.)
    confirmation_mail_set(
        unconfirmed, recipient="late@example.org", claimed_at=handed, handed_over_at=handed, sent_at=None
    )
    assert mail_once.settle_unconfirmed(
        purpose="order_confirmation", keys=[unconfirmed.pk], handover_lease=timedelta(minutes=4), now=now
    )
    staff_sign_in(page, base)

    page.goto(base + "/admin/core/mailonce/")
    page.click("#changelist-filter a:has-text('Yes')")
    page.wait_for_load_state()
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1
    assert "late@example.org" in rows.first.inner_text()
    page.screenshot(path=str(shots / "e-mails-sent-once-unconfirmed.png"), full_page=True)

    rows.first.locator("td.field-about a").click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/admin/orders/order/{unconfirmed.pk}/change/")
    assert unconfirmed.order_id in page.locator("#content").inner_text()
    page.screenshot(path=str(shots / "e-mails-sent-once-order.png"), full_page=True)
