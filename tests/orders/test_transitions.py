"""The reactions to an order's moves receive the move itself (a typed ``Transition``, the history row the state
machine wrote), delivered the outbox's durable way; never the partner's payload, which may change freely."""

import pytest

from orders import outbox, signals
from orders.models import Notification, Order, OrderStatusHistory
from orders.services import order_cancel
from payouts.models import Charge

from .factories import make_order

pytestmark = pytest.mark.django_db

S = Order.Status


def test_a_subscriber_of_moves_receives_each_move_as_the_machine_recorded_it(
    partner, django_capture_on_commit_callbacks
):
    got: list[signals.Transition] = []
    signals.subscribe_transitions("tests.moves", handler=got.append, to=[S.CANCELED])
    try:
        with django_capture_on_commit_callbacks(execute=True):
            order = make_order(partner)
        with django_capture_on_commit_callbacks(execute=True):
            order_cancel(order=order, actor="partner:test", reason="Changed plans")
    finally:
        signals.unsubscribe("tests.moves")
    row = OrderStatusHistory.objects.filter(order=order).latest("id")
    assert got == [
        signals.Transition(
            order_pk=order.pk,
            from_status=S.AWAITING_TRANSFER,
            to_status=S.CANCELED,
            at=row.at,
            actor="partner:test",
        )
    ]
    changed = Notification.objects.filter(order=order, type=Notification.Type.ORDER_STATUS_CHANGED).latest(
        "id"
    )
    assert changed.transition_id == row.pk


def test_the_refund_follows_the_move_whatever_the_partners_payload_says(
    partner, monkeypatch, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = make_order(partner)
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER
    real_payload = outbox.order_payload

    def another_shape(**kwargs):
        # The public payload changes shape (here: its order's status is no longer where it was).
        data = real_payload(**kwargs)
        data["status"] = "renamed"
        return data

    monkeypatch.setattr(outbox, "order_payload", another_shape)
    with django_capture_on_commit_callbacks(execute=True):
        order_cancel(order=order, actor="partner:test")
    assert Charge.objects.get(order=order).refund_status == Charge.RefundStatus.SUCCEEDED
