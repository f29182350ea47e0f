"""Payouts' reactions to order events (``orders.signals``): the confirmation of a new order, the refund of a
canceled one. Subscribed in ``PayoutsConfig.ready``; each handler runs after commit, in a worker, at least
once per notification, and is idempotent.
"""

from __future__ import annotations

import logging

from django.db import transaction

from catalog.models import Event
from config.core.publish import publish
from orders import outbox
from orders import services as order_services
from orders.models import Notification, Order

from ..errors import PlatformUnavailable
from .charges import charge_for_order
from .confirmations import confirmations_nudge, orders_confirm_batch
from .refunds import refund_enqueue, refund_request
from .testmode import test_charge_for_order

logger = logging.getLogger(__name__)

S = Order.Status
# Retried with backoff by the delivery task, on top of the database, network and mail-server errors.
TRANSIENT = (PlatformUnavailable,)


def order_confirm(*, order_pk: int) -> Order | None:
    """Charge the partner's card for the order, move it to ``awaiting_transfer`` and e-mail the seller.

    Idempotent step by step: a retry or a second delivery charges once (``charge_for_order`` is idempotent
    per order, and only an ``accepted`` order is charged, under its row lock), moves once (the transition
    re-checks the status under the lock) and mails at most once (``order_confirmation_email``).
    ``PlatformUnavailable``, database and mail-server errors propagate for the task to retry.
    """
    if not order_services.order_confirmation_started(order_pk=order_pk):
        return None
    with transaction.atomic():
        # Race: a cancel arriving while the card is charged — the order's lock makes one wait for the other,
        # so an order is never charged after it was canceled.
        order = Order.objects.select_for_update().get(pk=order_pk)
        if (
            order.status == S.ACCEPTED
            and Event.objects.filter(pk=order.event_id, status=Event.Status.CANCELED).exists()
        ):
            # The event was canceled between the order and its confirmation: never charge for it.
            return order_services.order_transition(
                order=order,
                to=S.CANCELED,
                actor="system:catalog",
                reason=order_services.EVENT_CANCELED_REASON,
                reason_code=outbox.REASON_EVENT_CANCELED,
            )
        if order.status == S.ACCEPTED:
            # A test-mode order is charged on the sandbox only, never on the partner's real card.
            charge = charge_for_order(order=order) if order.livemode else test_charge_for_order(order=order)
            if charge.status != "succeeded":
                return order_services.order_transition(
                    order=order,
                    to=S.CANCELED,
                    actor="system:payment",
                    reason=f"Card declined: {charge.failure_reason or 'no reason given'}",
                    reason_code=outbox.REASON_CARD_DECLINED,
                )
            order = order_services.order_transition(
                order=order, to=S.AWAITING_TRANSFER, actor="system:confirmation", reason="Card charged"
            )
    if order.status == S.AWAITING_TRANSFER:
        order_services.order_confirmation_email(order_pk=order.pk)
    return order


def order_confirmation_publish(order_pk: int) -> bool:
    return publish("payouts.tasks.order_confirm", order_pk)


def orders_requeue_unconfirmed(*, now=None) -> list[int]:
    """Beat: publish again the confirmations that never began or stalled (see ``orders.services``)."""
    return order_services.orders_requeue_unconfirmed(publish_confirmation=order_confirmation_publish, now=now)


def on_order_created(notification: Notification) -> None:
    """A new order waits for its confirmation: a batch task is on its way (``confirmations``)."""
    confirmations_nudge()


def on_order_created_now(notification: Notification) -> None:
    """The confirmation of this order now, for a caller that waits for its outcome (test mode's advance)."""
    orders_confirm_batch(order_pks=[notification.order_id])


def on_order_status_changed(notification: Notification) -> None:
    """A canceled order's succeeded charge owes a refund (an expired one keeps it, see ``refunds``).

    The notification was written in the cancel's transaction, so this runs for every cancel; were its
    messages lost, ``refunds_sweep`` still finds the canceled order's unrefunded charge.
    """
    if notification.payload["data"]["order"]["status"] != S.CANCELED:
        return
    if refund_request(order_pk=notification.order_id):
        refund_enqueue(order_pk=notification.order_id)
