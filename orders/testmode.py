"""Test mode's order simulator: ``POST /v1/test/orders/{order_id}/advance`` (docs/partners/test-mode.md "Test mode").

A test order is moved along its legal path one step at a time, every step through ``order_transition`` (so
each writes its history row and its ``order.status_changed`` notification, and reaches webhooks like a live
change); the ticket's arrival and its acceptance on the platform go through the registered ticket receipt
(``orders.extensions.ticket_receipt``: transfer detection's ``orders.transfers.decision.state``), so
the order's ``transfer`` moves (with its ``order.transfer_updated``) as a live order's would. The step out
of ``accepted`` is the confirmation itself, which belongs to the app that reacts to ``order.created`` (the
sandbox charge and the ``[TEST]`` e-mail): it is run here, at once, through the event registry, exactly as
the worker would run it (a later delivery of the same notification to the same subscriber is skipped by its
receipt).
"""

from __future__ import annotations

from . import delivery, errors, extensions, outbox, signals
from .models import Notification, Order
from .services import LEGAL_TRANSITIONS, order_transition

S = Order.Status

# The order's main path, and the side exits a partner can simulate from it.
MAIN_PATH = (*Order.OPEN_STATUSES, *Order.PAYOUT_PATH)
ADVANCE_TARGETS = (*MAIN_PATH[1:], S.EXPIRED, S.CANCELED)
ACTOR = "system:test_mode"
_REASONS = {
    S.TICKET_RECEIVED: ("Test mode: ticket received", None),
    S.PAYOUT_IN_PROCESS: ("Test mode: payout started (no money moves)", None),
    S.SCHEDULED: ("Test mode: payout scheduled (no money moves)", None),
    S.PAID: ("Test mode: payout disbursed (no money moves)", None),
    S.EXPIRED: ("Test mode: in-hand date passed", outbox.REASON_IN_HAND_DATE_PASSED),
    S.CANCELED: ("Test mode: canceled", outbox.REASON_CANCELED_BY_PARTNER),
}


class IllegalAdvance(Exception):
    """No legal path leads from the order's status to the target."""

    def __init__(self, *, order_id: str, from_status: str, to_status: str) -> None:
        self.order_id, self.from_status, self.to_status = order_id, from_status, to_status
        super().__init__(f"Order {order_id} cannot advance from {from_status} to {to_status}.")

    def api_error(self) -> errors.IllegalTransitionError:
        return errors.IllegalTransitionError(
            f"A {self.from_status} order cannot advance to {self.to_status}.",
            details={"order_id": self.order_id, "status": self.from_status, "to": self.to_status},
        )


def advance_path(*, from_status: str, to: str) -> list[str]:
    """The statuses an order passes through, after ``from_status``, to reach ``to``; empty if none does.

    The main path goes forward only; ``expired`` is reached from ``awaiting_transfer`` (through it from
    ``accepted``), ``canceled`` directly from any status that may be canceled."""
    if to in MAIN_PATH and from_status in MAIN_PATH:
        start, end = MAIN_PATH.index(from_status), MAIN_PATH.index(to)
        return list(MAIN_PATH[start + 1 : end + 1]) if end > start else []
    if to == S.EXPIRED and from_status in (S.ACCEPTED, S.AWAITING_TRANSFER):
        return [*advance_path(from_status=from_status, to=S.AWAITING_TRANSFER), S.EXPIRED]
    if to == S.CANCELED and S.CANCELED in LEGAL_TRANSITIONS[from_status]:
        return [S.CANCELED]
    return []


def _confirm_now(order: Order) -> Order:
    """Run the subscribers of the order's ``order.created`` now, as the worker would; return the fresh order."""
    created = (
        Notification.objects.filter(order_id=order.pk, type=Notification.Type.ORDER_CREATED)
        .values_list("pk", flat=True)
        .first()
    )
    if created is not None:
        for subscriber in signals.subscribers_for(Notification.Type.ORDER_CREATED):
            delivery.notification_deliver(notification_pk=created, subscriber_name=subscriber.name, now=True)
    return Order.objects.select_related("event").get(pk=order.pk)


def _step(order: Order, step: str, reason: str, reason_code: str | None) -> Order:
    """One step of the path. The ticket arrives as staff would record it (source ``staff``, not yet accepted
    on the platform); leaving ``ticket_received`` for the payout records the tickets accepted first, as
    the payout gate asks of a live order (docs/partners/orders.md "Transfer")."""
    if step == S.TICKET_RECEIVED:
        return extensions.ticket_receipt().receive(order=order, source="staff", actor=ACTOR, reason=reason)
    if step == S.PAYOUT_IN_PROCESS and order.transfer.state != Order.TransferState.ACCEPTED:
        order = extensions.ticket_receipt().accept(
            order=order,
            actor=ACTOR,
            reason="Test mode: tickets accepted on the platform",
            reason_code=outbox.REASON_ACCEPTED_BY_STAFF,
        )
    return order_transition(order=order, to=step, actor=ACTOR, reason=reason, reason_code=reason_code)


def order_advance(*, order: Order, to: str) -> Order:
    """Move a test-mode order to ``to`` along its legal path, every intermediate step included.

    From ``accepted`` the first step is the confirmation (sandbox charge, ``[TEST]`` e-mail); a declined
    charge cancels the order with ``card_declined`` and the rest of the path is then illegal. Raises
    ``IllegalAdvance`` when no legal path leads to ``to`` (also when another request moved the order
    meanwhile). Never called for a live order.
    """
    if order.livemode:
        raise ValueError("Only test-mode orders can be advanced.")
    path = advance_path(from_status=order.status, to=to)
    if not path:
        raise IllegalAdvance(order_id=order.order_id, from_status=order.status, to_status=to)
    for step in path:
        if step == S.AWAITING_TRANSFER and order.status == S.ACCEPTED:
            order = _confirm_now(order)
            if order.status != S.AWAITING_TRANSFER:
                raise IllegalAdvance(order_id=order.order_id, from_status=order.status, to_status=to)
            continue
        reason, reason_code = _REASONS[step]
        try:
            order = _step(order, step, reason, reason_code)
        except errors.IllegalTransition as exc:
            raise IllegalAdvance(order_id=order.order_id, from_status=exc.from_status, to_status=to) from exc
    return order
