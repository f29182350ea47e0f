"""The staff dashboard in a real browser (Debian's chromium): every queue on the admin's index shows a count,
and its link opens the filtered list with exactly that many rows.

The screenshot goes to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots).
"""

import os
import re
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from orders.models import Order
from payouts.models import Charge
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

from .test_dashboard import _charge, _endpoint, _order, _payout

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Queue label → how many of the data set below belong in it.
EXPECTED = {
    "Transfers due within 48 hours": 1,
    "Overdue transfers": 1,
    "Declined charges": 1,
    "Failed refunds": 1,
    "Failed payouts": 1,
    "Disabled webhook endpoints": 1,
}


def _venue_today(order) -> date:
    """Today at the order's venue: the transfer queues read the in-hand date there, at any hour of UTC's day."""
    return timezone.now().astimezone(ZoneInfo(order.event.timezone)).date()


def _data_set(partner) -> None:
    today = timezone.localdate()
    now = timezone.now()
    morning = timezone.make_aware(datetime.combine(today, time(0, 30)))
    due = _order(partner, status="awaiting_transfer", created=morning, quantity=1, price="30.00")
    overdue = _order(
        partner, status="awaiting_transfer", created=now - timedelta(days=3), quantity=3, price="20.00"
    )
    Order.objects.filter(pk=due.pk).update(in_hand_date=_venue_today(due))
    Order.objects.filter(pk=overdue.pk).update(in_hand_date=_venue_today(overdue) - timedelta(days=1))
    received = _order(
        partner, status="ticket_received", created=now - timedelta(days=9), quantity=5, price="11"
    )
    _set_charge(due, status="succeeded", created=morning)
    _set_charge(overdue, status="failed", created=now - timedelta(days=3))
    _set_charge(received, status="succeeded", created=now - timedelta(days=9), refund_status="failed")
    _payout(received, status="failed")
    _endpoint(partner, status="enabled")
    _endpoint(partner, status="disabled", disabled_reason="endpoint_gone")


def _set_charge(order, *, status: str, created: datetime, refund_status: str = "none") -> None:
    """The order's charge as the queue needs it (the confirmation, run on commit here, may have made one)."""
    if not Charge.objects.filter(order=order).update(
        status=status, refund_status=refund_status, created_at=created
    ):
        _charge(order, status=status, created=created, refund_status=refund_status)


def _listed_rows(page) -> int:
    """The changelist's own count ("3 orders", "1 charge"), or its rows when it prints none."""
    text = page.locator("p.paginator").inner_text()
    match = re.search(r"(\d+)\s+\w+", text)
    return int(match.group(1)) if match else page.locator("#result_list tbody tr").count()


def test_each_dashboard_queue_opens_its_filtered_list(live_server, browser_page, partner):  # noqa: F811
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    _data_set(partner)
    staff_sign_in(page, base)
    page.screenshot(path=str(shots / "staff-dashboard-1280.png"), full_page=True)

    queues = page.locator("ul.staff-queues li")
    labels = [queues.nth(i).get_attribute("data-queue") for i in range(queues.count())]
    assert set(EXPECTED) <= set(labels), labels
    for label in labels:
        item = page.locator(f"ul.staff-queues li[data-queue='{label}']")
        count = int(item.locator(".count").inner_text())
        assert count == EXPECTED.get(label, count), label
        item.locator("a").click()
        page.wait_for_load_state()
        assert "/admin/" in page.url and "?" in page.url, (label, page.url)
        assert _listed_rows(page) == count, (label, page.url, page.locator("p.paginator").inner_text())
        if label == "Overdue transfers":
            page.screenshot(path=str(shots / "staff-queue-overdue-transfers-1280.png"), full_page=True)
        page.goto(base + "/admin/")
