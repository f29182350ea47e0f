"""An open transfer case that could still lead to a payout defers the in-hand expiry until it is resolved or
the event starts (docs/partners/orders.md "Life cycle")."""

from __future__ import annotations

from datetime import datetime, time, timedelta

import pytest
import time_machine

from orders.services import orders_expire_overdue
from orders.transfers.decision import state
from orders.transfers.models import TransferCase

from .conftest import awaiting_order

pytestmark = pytest.mark.django_db


def _venue_noon(order, day) -> datetime:
    return datetime.combine(day, time(12), tzinfo=order.event.zone)


def test_an_open_case_defers_the_in_hand_expiry_until_resolved(partner):
    order = awaiting_order(partner)
    other = awaiting_order(partner)
    case = state.case_open(order=order, kind=TransferCase.Kind.MISMATCH, summary="Row B instead of F")
    after_in_hand = _venue_noon(order, order.in_hand_date + timedelta(days=1))
    assert after_in_hand < order.event.starts_at

    with time_machine.travel(after_in_hand, tick=False):
        assert orders_expire_overdue() == [other.order_id]  # the order without a case expires as before
        order.refresh_from_db()
        assert order.status == "awaiting_transfer"

        state.case_move(
            case=case,
            to=TransferCase.State.RESOLVED,
            actor="staff:ana",
            reason="Wrong row",
            resolution="forged",
        )
        assert orders_expire_overdue() == [order.order_id]
    order.refresh_from_db()
    assert order.status == "expired"


def test_an_open_case_no_longer_defers_once_the_event_started(partner):
    order = awaiting_order(partner)
    state.case_open(order=order, kind=TransferCase.Kind.MISMATCH, summary="Row B instead of F")
    with time_machine.travel(order.event.starts_at - timedelta(minutes=1), tick=False):
        assert orders_expire_overdue() == []
    with time_machine.travel(order.event.starts_at + timedelta(minutes=1), tick=False):
        assert orders_expire_overdue() == [order.order_id]
