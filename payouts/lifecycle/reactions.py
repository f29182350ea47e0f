"""The lifecycle's reactions to what happens to an order (``orders.signals``): a new order waits for its
confirmation, a canceled one is owed its refund. Subscribed in ``PayoutsConfig.ready``; each handler runs after
commit, in a worker, at least once, and is idempotent.
"""

from __future__ import annotations

from orders.models import Notification, Order
from orders.signals import Transition

from ..errors import PlatformUnavailable
from ..services.refunds import refund_enqueue, refund_request
from .confirmation import confirmations_nudge, orders_confirm_batch

# Retried with backoff by the delivery task, on top of the database, network and mail-server errors.
TRANSIENT = (PlatformUnavailable,)


def on_order_created(notification: Notification) -> None:
    """A new order waits for its confirmation: a batch task is on its way (``confirmation``), gathering the
    orders created meanwhile."""
    confirmations_nudge(gather=True)


def orders_created_nudged_once(notifications: list[Notification]) -> set[int]:
    """A delivery batch's new orders need one nudge, its first's: the batch it publishes (or any that starts
    after it) claims every order committed before it, and these were, with their notifications. The others are
    left out (``orders.signals.subscribe``'s ``idle``): one round trip to Redis per batch, not one per order."""
    return {notification.pk for notification in notifications[1:]}


def on_order_created_now(notification: Notification) -> None:
    """The confirmation of this order now, for a caller that waits for its outcome (test mode's advance)."""
    orders_confirm_batch(order_pks=[notification.order_id])


def on_order_canceled(transition: Transition) -> None:
    """A canceled order's succeeded charge owes a refund (an expired one keeps it, see ``refunds``).

    The move was recorded in the cancel's transaction, so this runs for every cancel; were its messages lost,
    ``refunds_sweep`` still finds the canceled order's unrefunded charge.
    """
    if transition.to_status != Order.Status.CANCELED:
        return
    if refund_request(order_pk=transition.order_pk):
        refund_enqueue(order_pk=transition.order_pk)
