"""The dashboard's transfer queues read the in-hand date as the expiry run does: at the venue, not in UTC."""

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
