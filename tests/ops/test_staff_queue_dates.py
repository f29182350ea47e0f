"""The dashboard's transfer queues read the in-hand date as the expiry run does: at the venue, not in UTC."""

import re
from datetime import UTC, date, datetime

import pytest
import time_machine

from catalog.models import Event
from orders.models import Order
from orders.services import orders_expire_overdue
from payouts.backoffice.dashboard import staff_dashboard
from payouts.backoffice.metrics import gauges_compute
from tests.orders.factories import make_order

pytestmark = [
    pytest.mark.django_db,
    # The orders are made the day before the instants the tests read the queues at.
    pytest.mark.travel(datetime(2026, 11, 17, 4, 0, tzinfo=UTC)),
]

# At 05:00 UTC on 18 November it is still the 17th in Honolulu (UTC-10); at 12:00 UTC it is already the 19th
# on Kiritimati (UTC+14).
EARLY = datetime(2026, 11, 18, 5, 0, tzinfo=UTC)
LATE = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)


def awaiting(partner, *, zone: str, in_hand: date) -> Order:
    order = make_order(partner, status="awaiting_transfer")
    Event.objects.filter(pk=order.event_id).update(timezone=zone)
    Order.objects.filter(pk=order.pk).update(in_hand_date=in_hand)
    return order


def transfer_queues(now: datetime) -> dict[str, int]:
    queues = {q.label: q.count for q in staff_dashboard(now=now).queues}
    return {label: queues[label] for label in ("Transfers due within 48 hours", "Overdue transfers")}


def test_an_in_hand_date_past_in_utc_but_today_at_the_venue_is_due_not_overdue(partner):
    order = awaiting(partner, zone="Pacific/Honolulu", in_hand=date(2026, 11, 17))
    assert transfer_queues(EARLY) == {"Transfers due within 48 hours": 1, "Overdue transfers": 0}
    # The expiry run agrees: the venue's day is not over.
    assert orders_expire_overdue(now=EARLY) == []
    order.refresh_from_db()
    assert order.status == "awaiting_transfer"


def test_an_in_hand_date_today_in_utc_but_past_at_the_venue_is_overdue_and_expires(partner):
    order = awaiting(partner, zone="Pacific/Kiritimati", in_hand=date(2026, 11, 18))
    assert transfer_queues(LATE) == {"Transfers due within 48 hours": 0, "Overdue transfers": 1}
    # The metrics' staff queue gauge counts it the same way.
    with time_machine.travel(LATE, tick=False):
        assert gauges_compute()["staff_queue"]["overdue_transfers"] == 1
    # What the queue called overdue is what the expiry run expires.
    assert orders_expire_overdue(now=LATE) == [order.order_id]
    assert transfer_queues(LATE) == {"Transfers due within 48 hours": 0, "Overdue transfers": 0}


def _listed(client, url: str, now: datetime) -> set[str]:
    with time_machine.travel(now, tick=False):
        page = client.get(url)
    assert page.status_code == 200 and "?e=1" not in page.get("Location", ""), url
    return set(re.findall(r"ord_[A-Za-z0-9]+", page.content.decode()))


@pytest.mark.parametrize(
    "zone, in_hand, now, queue",
    [
        ("Pacific/Honolulu", date(2026, 11, 17), EARLY, "Transfers due within 48 hours"),
        ("Pacific/Kiritimati", date(2026, 11, 18), LATE, "Overdue transfers"),
        ("UTC", date(2026, 11, 17), LATE, "Overdue transfers"),
        ("UTC", date(2026, 11, 20), LATE, "Transfers due within 48 hours"),
    ],
)
def test_a_transfer_queue_opens_the_orders_it_counts_at_their_venues_date(
    admin_client, partner, zone, in_hand, now, queue
):
    order = awaiting(partner, zone=zone, in_hand=in_hand)
    # Another order in UTC, due in three days at its venue: neither due within 48 hours nor overdue.
    later = awaiting(partner, zone="UTC", in_hand=date(2026, 11, 21))
    queues = {q.label: q for q in staff_dashboard(now=now).queues}
    assert queues[queue].count == 1
    listed = _listed(admin_client, queues[queue].url, now)
    assert order.order_id in listed and later.order_id not in listed
    other = "Overdue transfers" if queue != "Overdue transfers" else "Transfers due within 48 hours"
    assert queues[other].count == 0
    assert order.order_id not in _listed(admin_client, queues[other].url, now)
