"""Test mode's advance moves the transfer as live orders move (docs/partners/test-mode.md "Test mode"): the
ticket is received by ``staff`` and, past ``ticket_received``, accepted before the payout starts."""

from __future__ import annotations

import pytest

from orders.models import Order
from orders.testmode import order_advance
from payouts.models import Payout
from payouts.services.progression import payouts_progress

from .conftest import awaiting_order

pytestmark = pytest.mark.django_db


def test_advancing_to_ticket_received_records_a_staff_detection_not_yet_accepted(partner):
    order = order_advance(order=awaiting_order(partner, livemode=False), to="ticket_received")
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.source) == (
        "ticket_received",
        "detected",
        "staff",
    )
    assert order.transfer.quantity_detected == order.quantity and order.transfer.accepted_at is None
    history = list(order.status_history.values_list("to_status", "reason"))
    assert history[-1] == ("ticket_received", "Test mode: ticket received")


@pytest.mark.parametrize("start", ["awaiting_transfer", "ticket_received"])
def test_advancing_past_ticket_received_records_accepted_before_the_payout(partner, start):
    order = awaiting_order(partner, livemode=False)
    if start == "ticket_received":
        order = order_advance(order=order, to="ticket_received")
    order = order_advance(order=order, to="paid")
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == ("paid", "accepted")
    assert order.transfer.accepted_at is not None
    accepted = order.transfer_history.get(to_status="accepted").at
    payout_started = order.status_history.get(to_status="payout_in_process").at
    assert accepted <= payout_started
    payouts_progress()
    assert not Payout.objects.filter(order=order).exists()  # test orders never pay out for real


def test_advance_to_expired_leaves_the_transfer_alone(partner):
    order = order_advance(order=awaiting_order(partner, livemode=False), to="expired")
    assert Order.objects.get(pk=order.pk).transfer.state == "none"
