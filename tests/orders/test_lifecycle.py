"""order_transition: the legal moves (docs/partners/orders.md "Life cycle"), refusals, history, quantity, expiry."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connections

from catalog.models import Row
from orders import tasks
from orders.errors import IllegalTransition
from orders.models import Order, OrderStatusHistory
from orders.services import LEGAL_TRANSITIONS, order_cancel, order_transition, orders_expire_overdue
from tests.catalog.factories import EventFactory, SectionFactory, VenueFactory
from tests.conftest import assert_error
from tests.orders.factories import order_row

from .conftest import create_order

pytestmark = pytest.mark.django_db

S = Order.Status
EXPECTED_LEGAL = {
    ("accepted", "awaiting_transfer"),
    ("accepted", "canceled"),
    ("awaiting_transfer", "ticket_received"),
    ("awaiting_transfer", "canceled"),
    ("awaiting_transfer", "expired"),
    ("ticket_received", "payout_in_process"),
    ("ticket_received", "awaiting_transfer"),  # the seller recalled the transfer before the payout
    ("payout_in_process", "scheduled"),
    ("scheduled", "paid"),
    ("paid", "payout_in_process"),  # the platform failed the payout after it reported it paid
}
PATH_TO = {
    "accepted": [],
    "awaiting_transfer": ["awaiting_transfer"],
    "ticket_received": ["awaiting_transfer", "ticket_received"],
    "payout_in_process": ["awaiting_transfer", "ticket_received", "payout_in_process"],
    "scheduled": ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled"],
    "paid": ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled", "paid"],
    "expired": ["awaiting_transfer", "expired"],
    "canceled": ["canceled"],
}


def order_in(partner, status: str, **kwargs) -> Order:
    order = create_order(partner, **kwargs)
    for step in PATH_TO[status]:
        order = order_transition(order=order, to=step, actor="staff:setup")
    return order


def test_the_legal_moves_are_exactly_the_life_cycle_diagram():
    legal = {(a, b) for a, targets in LEGAL_TRANSITIONS.items() for b in targets}
    assert legal == EXPECTED_LEGAL
    assert set(LEGAL_TRANSITIONS) == set(S.values)


@pytest.mark.parametrize("from_status", list(S.values))
@pytest.mark.parametrize("to_status", list(S.values))
def test_every_move_is_allowed_or_refused_per_the_diagram(partner, from_status, to_status):
    order = order_in(partner, from_status)
    history_before = OrderStatusHistory.objects.filter(order=order).count()
    if (from_status, to_status) in EXPECTED_LEGAL:
        moved = order_transition(order=order, to=to_status, actor="staff:bob", reason="because")
        assert moved.status == to_status
        last = OrderStatusHistory.objects.filter(order=order).order_by("-at", "-id").first()
        assert (last.from_status, last.to_status, last.actor, last.reason) == (
            from_status,
            to_status,
            "staff:bob",
            "because",
        )
    else:
        with pytest.raises(IllegalTransition):
            order_transition(order=order, to=to_status, actor="staff:bob")
        assert Order.objects.get(pk=order.pk).status == from_status
        assert OrderStatusHistory.objects.filter(order=order).count() == history_before


def test_unknown_status_is_a_programming_error(partner):
    order = create_order(partner)
    with pytest.raises(ValueError):
        order_transition(order=order, to="shipped", actor="staff:x")


def test_transition_updates_the_callers_instance_and_returns_a_fresh_one(partner):
    order = create_order(partner)
    stale = Order.objects.get(pk=order.pk)
    moved = order_transition(order=order, to="awaiting_transfer", actor="system:confirmation")
    assert order.status == moved.status == "awaiting_transfer"
    # A stale copy cannot move the order from a status it no longer has.
    with pytest.raises(IllegalTransition):
        order_transition(order=stale, to="awaiting_transfer", actor="system:confirmation")


@pytest.mark.parametrize("final", ["canceled", "expired"])
def test_cancel_and_expiry_give_the_quantity_back_once(partner, final):
    row = order_row(available_quantity=10)
    order = order_in(partner, "awaiting_transfer", row=row, quantity=3)
    assert Row.objects.get(pk=row.pk).available_quantity == 7
    order_transition(order=order, to=final, actor="system:test")
    assert Row.objects.get(pk=row.pk).available_quantity == 10
    with pytest.raises(IllegalTransition):
        order_transition(order=order, to=final, actor="system:test")
    assert Row.objects.get(pk=row.pk).available_quantity == 10


def test_other_moves_leave_the_quantity_alone(partner):
    row = order_row(available_quantity=10)
    order_in(partner, "paid", row=row, quantity=3)
    assert Row.objects.get(pk=row.pk).available_quantity == 7


def test_order_cancel_maps_refusal_to_order_not_cancelable(partner):
    from orders.errors import OrderNotCancelable

    order = order_in(partner, "ticket_received")
    with pytest.raises(OrderNotCancelable):
        order_cancel(order=order, actor="partner:x")


@pytest.mark.django_db(transaction=True)
def test_concurrent_cancels_apply_once(partner, auth_client):
    row = order_row(available_quantity=10)
    order = create_order(partner, row=row, quantity=2)
    barrier = threading.Barrier(8)
    results = []

    def worker():
        try:
            barrier.wait(timeout=10)
            order_cancel(order=Order.objects.get(pk=order.pk), actor="partner:x")
            results.append("ok")
        except Exception as exc:
            results.append(type(exc).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results) == ["OrderNotCancelable"] * 7 + ["ok"]
    assert Row.objects.get(pk=row.pk).available_quantity == 10
    assert OrderStatusHistory.objects.filter(order=order, to_status="canceled").count() == 1


# --- expiry -------------------------------------------------------------------------------------------------
def _event_in(tz: str, starts_at: datetime):
    return EventFactory(venue=VenueFactory(timezone=tz), starts_at=starts_at)


def test_expiry_task_expires_orders_past_their_in_hand_date_in_venue_time(partner):
    # Event in Los Angeles on Dec 20 (local), tickets due Dec 10 (local).
    starts = datetime(2030, 12, 21, 3, 0, tzinfo=UTC)  # Dec 20, 19:00 in Los Angeles
    event = _event_in("America/Los_Angeles", starts)
    row = order_row(section=SectionFactory(event=event), available_quantity=10)
    with time_machine.travel(datetime(2030, 12, 1, tzinfo=UTC), tick=False):
        order = order_in(partner, "awaiting_transfer", row=row, in_hand_date=datetime(2030, 12, 10).date())
        other = order_in(partner, "ticket_received", row=row, in_hand_date=datetime(2030, 12, 10).date())

    # 07:00 UTC on Dec 11 is still Dec 10 in Los Angeles: not overdue yet.
    with time_machine.travel(datetime(2030, 12, 11, 7, 0, tzinfo=UTC), tick=False):
        assert tasks.orders_expire_overdue() == 0
    # 08:30 UTC on Dec 11 is Dec 11, 00:30 in Los Angeles: the in-hand date has passed.
    with time_machine.travel(datetime(2030, 12, 11, 8, 30, tzinfo=UTC), tick=False):
        assert tasks.orders_expire_overdue() == 1
        assert tasks.orders_expire_overdue() == 0

    order.refresh_from_db()
    assert order.status == "expired"
    last = order.status_history.order_by("-at", "-id").first()
    assert (last.from_status, last.actor) == ("awaiting_transfer", "system:expiry")
    assert "2030-12-10" in last.reason
    assert Order.objects.get(pk=other.pk).status == "ticket_received"
    assert Row.objects.get(pk=row.pk).available_quantity == 8  # the expired order's 2 came back


def test_ready_to_deliver_orders_expire_when_the_event_starts(partner):
    starts = datetime(2030, 6, 1, 20, 0, tzinfo=UTC)
    event = _event_in("Europe/London", starts)
    row = order_row(section=SectionFactory(event=event))
    with time_machine.travel(datetime(2030, 5, 1, tzinfo=UTC), tick=False):
        ready = order_in(partner, "awaiting_transfer", row=row, is_ready_to_deliver=True, in_hand_date=None)
        accepted = order_in(partner, "accepted", row=row, is_ready_to_deliver=True, in_hand_date=None)
    with time_machine.travel(starts - timedelta(minutes=1), tick=False):
        assert orders_expire_overdue() == []
    with time_machine.travel(starts + timedelta(minutes=1), tick=False):
        assert orders_expire_overdue() == [ready.order_id]
    assert Order.objects.get(pk=accepted.pk).status == "accepted"  # only awaiting_transfer expires


def test_expired_order_cannot_be_canceled_through_the_api(auth_client, partner):
    order = order_in(partner, "expired")
    assert_error(auth_client.post(f"/v1/orders/{order.order_id}/cancel"), 409, "ORDER_NOT_CANCELABLE")
