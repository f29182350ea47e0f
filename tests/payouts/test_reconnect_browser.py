"""A partner whose payout failed connects a working payout account in a real browser (Debian's chromium): the
portal says the failed payout is sent again, it is made again once, and neither a reload nor a replay of the
platform's return makes it twice.

The screenshot goes to ``PORTAL_SCREENSHOTS`` (default /tmp/portal-shots).
"""

import os
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.utils import timezone

from partners.portal_services import portal_user_invite
from payouts.models import Payout
from payouts.services.methods import payment_methods_create_sandbox
from payouts.services.progression import payouts_progress
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.portal.test_browser import (  # noqa: F401  (fixtures)
    browser_page,
    live_server,
    portal_sign_in,
    sandbox_authorize_account,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMAIL, PASSWORD = "owner@harbour.example", "browser test pass 4242"
CLOSED_ACCOUNT, WORKING_ACCOUNT = "000111111113", "000123456789"  # the sandbox's test numbers


def test_connecting_a_working_account_sends_the_failed_payout_again_once(live_server, browser_page):  # noqa: F811
    page, base = browser_page, live_server.url
    creds = make_partner(name="Harbour Tickets", email="ops@harbour.example", payment_methods=False)
    partner = creds.partner
    payment_methods_create_sandbox(partner=partner, account_number=CLOSED_ACCOUNT)
    portal_user_invite(partner=partner, email=EMAIL, password=PASSWORD)
    order = make_order(partner, status="ticket_received")
    payouts_progress()
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):  # the sandbox fails it when it is due
        payouts_progress()
    payout = Payout.objects.get(order=order)
    assert (payout.status, payout.attempt) == ("failed", 1)

    returns: list[str] = []
    page.on("request", lambda r: returns.append(r.url) if "/payment-methods/payout/return" in r.url else None)
    portal_sign_in(page, base, email=EMAIL, password=PASSWORD)
    page.goto(f"{base}/portal/settings/payment-methods")
    page.check("input[name=payout-confirm_replace]")  # the order is active: replacing needs a confirmation
    page.click("button:has-text('Replace payout account')")
    sandbox_authorize_account(
        page, method="ach", holder="Harbour Tickets LLC", account_number=WORKING_ACCOUNT
    )
    page.wait_for_url(f"{base}/portal/settings/payment-methods")
    body = page.inner_text("body")
    assert "Payout account connected: Sandbox Test Bank ••••6789" in body
    assert "1 failed payout will be sent to it again." in body
    shots = Path(os.environ.get("PORTAL_SCREENSHOTS", "/tmp/portal-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "payout-account-reconnected.png"), full_page=True)

    payout.refresh_from_db()
    assert (payout.status, payout.attempt) == ("in_process", 2)
    order.refresh_from_db()
    assert order.status == "payout_in_process"

    # A reload of the page, and a replay of the platform's return, make nothing again.
    page.reload()
    assert "will be sent to it again" not in page.inner_text("body")
    [return_url] = returns
    page.goto(return_url)
    page.wait_for_url(f"{base}/portal/settings/payment-methods")
    assert "could not be verified" in page.inner_text("body")
    payout.refresh_from_db()
    assert (payout.status, payout.attempt) == ("in_process", 2)
    assert payout.status_history.filter(from_status="failed", to_status="pending").count() == 1
