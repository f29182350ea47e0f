"""Notifications of orders: built, rendered and written with the change they tell of.

``order_notifications_record`` renders the notification (docs/partners/notifications-and-webhooks.md "Notifications")
and inserts it in the caller's transaction, so there is no change without its notification and no
notification without its change. After commit it is handed to its subscribers: orders/dispatch.py publishes the
delivery tasks (batched, with the beat's sweep for what never reached the broker), orders/delivery.py runs them.
Retention: ``notifications_purge`` deletes rows older than ``NOTIFICATION_RETENTION_DAYS`` in batches.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import prefetch_related_objects
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from config.api.envelope import utc_iso
from config.core import jsontext, rawsql
from config.core.purge import delete_in_batches

from .dispatch import notification_dispatch_after_commit, notifications_dispatch_after_commit
from .models import Notification, NotificationReceipt, Order, OrderStatusHistory

logger = logging.getLogger(__name__)

T = Notification.Type

# The transition's machine reason, as ``data.reason`` of ``order.status_changed`` (docs/partners/notifications-and-webhooks.md "Notifications").
REASON_CARD_DECLINED = "card_declined"
REASON_CANCELED_BY_PARTNER = "canceled_by_partner"
REASON_CANCELED_BY_STAFF = "canceled_by_staff"
REASON_EVENT_CANCELED = "event_canceled"
REASON_IN_HAND_DATE_PASSED = "in_hand_date_passed"
# ``paid`` → ``payout_in_process``: the payout failed after the platform reported it paid.
REASON_PAYOUT_FAILED = "payout_failed"
# The transfer's moves (docs/partners/orders.md "Transfer"): ``order.status_changed`` into and out of
# ``ticket_received``, and ``order.transfer_updated``.
REASON_TRANSFER_DETECTED = "transfer_detected"
REASON_FILE_VERIFIED = "file_verified"
REASON_RECEIVED_BY_STAFF = "received_by_staff"
REASON_TRANSFER_RECALLED = "transfer_recalled"
REASON_TRANSFER_PARTIAL = "transfer_partial"
REASON_TRANSFER_MISMATCH = "transfer_mismatch"
REASON_TRANSFER_ACCEPTED = "transfer_accepted"
REASON_ACCEPTED_BY_STAFF = "accepted_by_staff"
STATUS_REASON_CODES = (
    REASON_CARD_DECLINED,
    REASON_CANCELED_BY_PARTNER,
    REASON_CANCELED_BY_STAFF,
    REASON_EVENT_CANCELED,
    REASON_IN_HAND_DATE_PASSED,
    REASON_TRANSFER_DETECTED,
    REASON_FILE_VERIFIED,
    REASON_RECEIVED_BY_STAFF,
    REASON_TRANSFER_RECALLED,
    REASON_PAYOUT_FAILED,
)
TRANSFER_REASON_CODES = (
    REASON_TRANSFER_DETECTED,
    REASON_FILE_VERIFIED,
    REASON_RECEIVED_BY_STAFF,
    REASON_TRANSFER_PARTIAL,
    REASON_TRANSFER_MISMATCH,
    REASON_TRANSFER_ACCEPTED,
    REASON_ACCEPTED_BY_STAFF,
    REASON_TRANSFER_RECALLED,
)
REASON_CODES = frozenset(STATUS_REASON_CODES)

# How many rows one purge statement deletes.
PURGE_BATCH = 1000


# The API renderer's conversions (money as JSON numbers, dates as strings).
_ENCODER = JSONEncoder()


def _json_ready(data) -> dict:
    # The same encoding the API renderer applies, stored as JSON.
    return jsontext.as_json(data, default=_ENCODER.default)


def order_payload(*, order: Order, history: list[OrderStatusHistory] | None = None) -> dict:
    """The order object exactly as ``GET /v1/orders/{order_id}`` returns it.

    ``history``: the order's whole status history, when the caller has just written all of it (creation:
    the order and its one history row, with their event, are in memory as inserted); otherwise both are
    read again in the caller's transaction."""
    from .output import order_detail_output  # the serializers import the API layer's errors

    if history is None:
        order = Order.objects.select_related("event", "transfer_progress").get(pk=order.pk)
        history = list(OrderStatusHistory.objects.filter(order_id=order.pk).order_by("at", "id"))
    order.history_rows = history
    return _json_ready(order_detail_output(order))


def order_notification_build(
    *,
    order: Order,
    type: str,
    previous_status: str | None,
    reason: str | None,
    at: datetime,
    history: list[OrderStatusHistory] | None = None,
    rendered: dict | None = None,
) -> Notification:
    """The notification of a change of ``order``, rendered and not yet written (``order.pk`` may be unset: the
    order's creation on PostgreSQL inserts both in one statement). ``rendered``: the order as
    ``order_detail_output`` gave it, when the caller already has it."""
    if reason is not None and reason not in REASON_CODES:
        raise ValueError(f"Unknown notification reason {reason!r}")
    if rendered is None and history is None:
        order = Order.objects.select_related("event").get(pk=order.pk)
        history = list(OrderStatusHistory.objects.filter(order_id=order.pk).order_by("at", "id"))
    rendered_order = (
        _json_ready(rendered) if rendered is not None else order_payload(order=order, history=history)
    )
    notification = _notification_of(
        order=order,
        type=type,
        at=at,
        data={"order": rendered_order, "previous_status": previous_status, "reason": reason},
    )
    if type == T.ORDER_STATUS_CHANGED and history:
        # The move just recorded, the order's latest history row: what the in-process subscribers receive.
        notification.transition = max(history, key=lambda row: row.pk)
    return notification


def _notification_of(*, order: Order, type: str, at: datetime, data: dict) -> Notification:
    """A notification about ``order`` in the envelope every notification has, not yet written."""
    notification = Notification(
        partner_id=order.partner_id, livemode=order.livemode, type=type, order_id=order.pk, created_at=at
    )
    notification.payload = {
        "id": notification.notification_id,
        "type": type,
        "created_at": utc_iso(at),
        "livemode": notification.livemode,
        "data": data,
    }
    return notification


def order_notifications_record(
    *, moves: list[tuple[Order, str]], reason: str | None, at: datetime
) -> list[Notification]:
    """Write the ``order.status_changed`` notifications of orders that just moved (each with the status it left),
    in the caller's transaction: their histories read in one statement, the notifications inserted in one, and
    dispatched after commit: a lone one joins the coalesced delivery of the changes written one at a time
    (``notification_dispatch_after_commit``), many written together go in batched deliveries
    (``DELIVERY_BATCH`` per message)."""
    if reason is not None and reason not in REASON_CODES:
        raise ValueError(f"Unknown notification reason {reason!r}")
    if not moves:
        return []
    histories: dict[int, list[OrderStatusHistory]] = {order.pk: [] for order, _ in moves}
    # Their transfers (``order.transfer``), read in one statement too.
    prefetch_related_objects([order for order, _ in moves], "transfer_progress")
    for row in OrderStatusHistory.objects.filter(order_id__in=histories).order_by("order_id", "at", "id"):
        histories[row.order_id].append(row)
    notifications = [
        order_notification_build(
            order=order,
            type=T.ORDER_STATUS_CHANGED,
            previous_status=previous_status,
            reason=reason,
            at=at,
            history=histories[order.pk],
        )
        for order, previous_status in moves
    ]
    if len(notifications) == 1:
        rawsql.insert(notifications[0])
        notification_dispatch_after_commit(notification=notifications[0])
    else:
        rawsql.insert_many(notifications)
        notifications_dispatch_after_commit(notifications=notifications)
    return notifications


def transfer_notification_record(
    *, order: Order, previous_transfer_state: str, reason: str, at: datetime
) -> Notification:
    """Write ``order.transfer_updated`` for a change of ``order``'s transfer state in the caller's transaction."""
    if reason not in TRANSFER_REASON_CODES:
        raise ValueError(f"Unknown transfer notification reason {reason!r}")
    notification = _notification_of(
        order=order,
        type=T.ORDER_TRANSFER_UPDATED,
        at=at,
        data={
            "order": order_payload(order=order),
            "previous_transfer_state": previous_transfer_state,
            "reason": reason,
        },
    )
    rawsql.insert(notification)
    notification_dispatch_after_commit(notification=notification)
    return notification


def notifications_purge(*, now: datetime | None = None, batch: int = PURGE_BATCH) -> int:
    """Beat: delete notifications older than the retention, ``batch`` rows per statement. Returns the count."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.NOTIFICATION_RETENTION_DAYS)
    # Receipts go with their notification, in the same short transaction.
    return delete_in_batches(
        Notification.objects.filter(created_at__lt=cutoff).order_by("created_at", "id"),
        batch_size=batch,
        before_delete=lambda pks: NotificationReceipt.objects.filter(notification_id__in=pks).delete(),
    )
