"""The notification outbox: every order change a partner cares about, written in the change's transaction.

``order_notification_record`` renders the notification (docs/partners/notifications-and-webhooks.md "Notifications")
and inserts it in the caller's transaction, so there is no change without its notification and no
notification without its change. After commit the notification is handed to the subscribers of
``orders.signals`` that want it (their types and the order's new status) by a delivery task, and the cache
notes that it is on the way. Deliveries are batched, one task for many notifications:

- notifications written together (a confirmation batch's, ``order_notifications_record_many``) are published
  as one ``notifications_deliver_many`` task (``notifications_dispatch``, ``DELIVERY_BATCH`` per message);
- a notification written alone (an order's creation, one transition) joins a list in Redis, and one task is
  published unless one is already on its way, which takes the list when it starts
  (``notification_dispatch_coalesced``): a lone order's task is published at once, a burst's are a few.
  Without Redis (the embedded default, tasks in process) each is published alone, as before.

The task runs each notification's subscribers in turn, each receipt written as its handler returns, and marks
the rows dispatched once they all ran; a subscriber that fails for now has the task retried with backoff with
only the notifications not yet delivered, and the subscribers that already handled that one skip it by their
receipts (``NotificationReceipt``), so one failing subscriber never re-runs another, nor another notification.
``notifications_dispatch_pending`` (beat) publishes again every row not dispatched past the grace whose message
is not known to be on the way: one that never reached the broker, and one the broker lost with Redis (the note
in the cache, and the list, went with it).
Retention:
``notifications_purge`` deletes rows older than ``NOTIFICATION_RETENTION_DAYS`` in batches.
"""

import json
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from config.api.envelope import utc_iso
from config.api.ratelimit import pipelined
from config.core import rawsql
from config.core.publish import publish
from config.core.purge import delete_in_batches
from config.core.retrying import TRANSIENT_ERRORS

from . import signals
from .models import Notification, NotificationReceipt, Order, OrderStatusHistory

logger = logging.getLogger(__name__)

T = Notification.Type

# The transition's machine reason, as ``data.reason`` of ``order.status_changed`` (docs/partners/notifications-and-webhooks.md "Notifications").
REASON_CARD_DECLINED = "card_declined"
REASON_CANCELED_BY_PARTNER = "canceled_by_partner"
REASON_CANCELED_BY_STAFF = "canceled_by_staff"
REASON_EVENT_CANCELED = "event_canceled"
REASON_IN_HAND_DATE_PASSED = "in_hand_date_passed"
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

# How many rows one sweep publishes again, and one purge statement deletes.
DISPATCH_BATCH = 500
PURGE_BATCH = 1000
# How many notifications one batched delivery task carries.
DELIVERY_BATCH = 50
# With Redis: the notifications written one at a time waiting for a batched delivery (their pks, oldest first),
# and the note that a task taking them is on its way (``notification_dispatch_coalesced``).
PENDING_KEY = "outbox:pending"
DRAIN_NOTE_KEY = "outbox:deliveries-waiting"


def _json_ready(data) -> dict:
    # The same encoding the API renderer applies (money as JSON numbers, dates as strings), stored as JSON.
    return json.loads(json.dumps(data, cls=JSONEncoder))


def order_payload(*, order: Order, history: list[OrderStatusHistory] | None = None) -> dict:
    """The order object exactly as ``GET /v1/orders/{order_id}`` returns it.

    ``history``: the order's whole status history, when the caller has just written all of it (creation:
    the order and its one history row, with their event, are in memory as inserted); otherwise both are
    read again in the caller's transaction."""
    from .serializers import order_detail_output  # serializers import the API layer's errors

    if history is None:
        order = Order.objects.select_related("event").get(pk=order.pk)
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
    rendered_order = (
        _json_ready(rendered) if rendered is not None else order_payload(order=order, history=history)
    )
    return _notification_of(
        order=order,
        type=type,
        at=at,
        data={"order": rendered_order, "previous_status": previous_status, "reason": reason},
    )


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


def order_notification_record(
    *,
    order: Order,
    type: str,
    previous_status: str | None,
    reason: str | None,
    at: datetime,
    history: list[OrderStatusHistory] | None = None,
) -> Notification:
    """Write the notification of a change of ``order`` in the caller's transaction; dispatch after commit."""
    notification = order_notification_build(
        order=order, type=type, previous_status=previous_status, reason=reason, at=at, history=history
    )
    rawsql.insert(notification)
    notification_dispatch_after_commit(notification=notification)
    return notification


def order_notifications_record_many(
    *, moves: list[tuple[Order, str]], reason: str | None, at: datetime
) -> list[Notification]:
    """``order_notification_record`` of ``order.status_changed`` for many orders that just moved (each with the
    status it left), in the caller's transaction: their histories read in one statement, the notifications
    inserted in one; all of them are dispatched after commit in one batched delivery (``DELIVERY_BATCH`` per
    message). The orders carry their event (``select_related``)."""
    if reason is not None and reason not in REASON_CODES:
        raise ValueError(f"Unknown notification reason {reason!r}")
    if not moves:
        return []
    histories: dict[int, list[OrderStatusHistory]] = {order.pk: [] for order, _ in moves}
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
    Notification.objects.bulk_create(notifications)
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


def _order_status(payload: dict | None) -> str | None:
    order = ((payload or {}).get("data") or {}).get("order")
    return order.get("status") if isinstance(order, dict) else None


def notification_dispatch_after_commit(*, notification: Notification) -> None:
    """Hand ``notification`` to the subscribers once the transaction that wrote it commits, coalesced with the
    other notifications written one at a time meanwhile (``notification_dispatch_coalesced``)."""
    pk, notification_type = notification.pk, notification.type
    status = _order_status(notification.payload)
    transaction.on_commit(
        lambda: notification_dispatch_coalesced(
            notification_pk=pk, notification_type=notification_type, order_status=status
        )
    )


def notifications_dispatch_after_commit(*, notifications: list[Notification]) -> None:
    """Hand ``notifications`` (written together) to their subscribers in batched deliveries once the
    transaction that wrote them commits (``notifications_dispatch``)."""
    entries = [(n.pk, n.type, _order_status(n.payload)) for n in notifications]
    if entries:
        transaction.on_commit(lambda: notifications_dispatch(entries=entries))


def notifications_dispatch(*, entries: list[tuple[int, str, str | None]]) -> int:
    """Publish the delivery of many notifications (``(pk, type, order status)`` each) as batched deliveries,
    ``DELIVERY_BATCH`` notifications per message, each to the subscribers that want it; the notifications nobody
    wants are marked dispatched at once. Returns how many were handed over.

    Stops at the first failed publish (the broker is down): the rest are left undispatched for
    ``notifications_dispatch_pending``.
    """
    deliveries: list[tuple[int, list[str]]] = []
    nobody: list[int] = []
    for pk, notification_type, order_status in entries:
        names = [s.name for s in signals.subscribers_for(notification_type, order_status)]
        if names:
            deliveries.append((pk, names))
        else:
            nobody.append(pk)
    _mark_dispatched_many(nobody)
    handed = len(nobody)
    for start in range(0, len(deliveries), DELIVERY_BATCH):
        chunk = deliveries[start : start + DELIVERY_BATCH]
        if not publish("orders.tasks.notifications_deliver_many", chunk):
            break
        _on_the_way([pk for pk, _ in chunk])
        handed += len(chunk)
    return handed


def notification_dispatch_coalesced(
    *, notification_pk: int, notification_type: str, order_status: str | None = None
) -> bool:
    """Hand one notification over to a batched delivery: with Redis, its pk joins the list of notifications
    waiting for one (``PENDING_KEY``, with its on-the-way note, in one round trip), and a delivery task is
    published unless one is already on its way (the note ``DRAIN_NOTE_KEY``, set in the same round trip after
    the push, and cleared by that task before it takes the list, so a notification added after its take always
    publishes another). A lone notification on a quiet system publishes its task at once; a burst publishes a
    few, each taking up to ``DELIVERY_BATCH``.

    Without Redis (the embedded default, tasks in process), or when Redis does not answer, the notification is
    published alone (``notification_dispatch``). Returns whether it was handed over.

    Lost on the way: a failed publish takes this notification's on-the-way note off again (the sweep publishes it
    once the grace has passed; a later task still finds it in the list, and its subscribers skip it by their
    receipts) and the task's note, so the next notification publishes again and its task takes the ones that
    counted on the failed one meanwhile (without a next one, the sweep publishes them once their notes expire,
    ``NOTIFICATION_REDISPATCH_SECONDS``). The list lost with Redis goes with the notes; a list taken by a worker
    that died before delivering keeps its notes until they expire, after which the sweep publishes them again.
    """
    names = [subscriber.name for subscriber in signals.subscribers_for(notification_type, order_status)]
    if not names:
        _mark_dispatched(notification_pk)
        return True
    backend = _redis()
    if backend is None:
        return notification_dispatch(
            notification_pk=notification_pk, notification_type=notification_type, order_status=order_status
        )
    try:
        noted = _pending_add(backend, notification_pk)
    except Exception:
        logger.warning("outbox: the cache did not answer; publishing pk=%s alone", notification_pk)
        return notification_dispatch(
            notification_pk=notification_pk, notification_type=notification_type, order_status=order_status
        )
    if not noted or publish("orders.tasks.notifications_deliver_many"):
        return True  # a task is on its way: it takes this one with the others
    _drain_note_clear()  # nothing on its way after all: the next notification tries again
    try:
        cache.delete(_on_the_way_key(notification_pk))
    except Exception:
        logger.warning(
            "outbox: the cache did not answer; pk=%s waits for its note to expire", notification_pk
        )
    return False


def notifications_pending_nudge() -> bool:
    """Publish one ``notifications_deliver_many`` task taking the waiting list unless one is already on its way;
    returns whether one is on its way now (False: the publish failed)."""
    try:
        if not cache.add(DRAIN_NOTE_KEY, 1, settings.NOTIFICATION_DELIVERY_NUDGE_SECONDS):
            return True
    except Exception:
        logger.warning("outbox: the cache did not answer; publishing the delivery task anyway")
    if publish("orders.tasks.notifications_deliver_many"):
        return True
    _drain_note_clear()  # nothing on its way after all: the next notification tries again
    return False


def _drain_note_clear() -> None:
    try:
        cache.delete(DRAIN_NOTE_KEY)
    except Exception:
        logger.warning("outbox: the cache did not answer; the delivery note expires by itself")


def _redis() -> RedisCache | None:
    backend = caches["default"]
    return backend if isinstance(backend, RedisCache) else None


def _pending_add(backend: RedisCache, notification_pk: int) -> bool:
    """Add ``notification_pk`` to the waiting list with its on-the-way note, then set the note that a delivery
    task is on its way unless it is there (``cache.add``), in one round trip, in that order. Returns whether
    this call set that note (and so must publish the task)."""
    pending_key = backend.make_and_validate_key(PENDING_KEY)
    on_the_way_key = backend.make_and_validate_key(_on_the_way_key(notification_pk))
    drain_note_key = backend.make_and_validate_key(DRAIN_NOTE_KEY)
    one = backend._cache._serializer.dumps(1)
    ttl = settings.NOTIFICATION_REDISPATCH_SECONDS
    replies = pipelined(
        backend._cache.get_client(pending_key, write=True),
        [
            ("SET", on_the_way_key, one, "EX", ttl),
            ("RPUSH", pending_key, notification_pk),
            # A list nobody takes (no worker for that long) ends with its notes: the sweep has them all.
            ("EXPIRE", pending_key, ttl),
            # After the push: a task that clears this note before its take finds the notification in the list.
            ("SET", drain_note_key, one, "NX", "EX", settings.NOTIFICATION_DELIVERY_NUDGE_SECONDS),
        ],
    )
    return bool(replies[3])


def notifications_pending_take(*, limit: int | None = None) -> list[int]:
    """Take up to ``limit`` (``DELIVERY_BATCH``) notifications off the list of those waiting for a batched
    delivery, oldest first, after clearing the note that a delivery task is on its way; publishes another task
    when the list may hold more. Returns their pks; none without Redis, or when it does not answer (the sweep
    publishes them once their notes expire)."""
    backend = _redis()
    if backend is None:
        return []
    limit = limit or DELIVERY_BATCH
    # Cleared before the take: a notification added after it publishes a task of its own.
    _drain_note_clear()
    key = backend.make_and_validate_key(PENDING_KEY)
    try:
        taken = backend._cache.get_client(key, write=True).lpop(key, limit) or []
    except Exception:
        logger.warning("outbox: the cache did not answer; the sweep publishes what waits", exc_info=True)
        return []
    if len(taken) >= limit:
        notifications_pending_nudge()  # more may be waiting: another worker may take them meanwhile
    return list(dict.fromkeys(int(pk) for pk in taken))


def notification_dispatch(
    *, notification_pk: int, notification_type: str, order_status: str | None = None
) -> bool:
    """Publish the delivery of a notification to the subscribers that want it (one task for all of them); mark
    the row dispatched once the broker took it. ``order_status``: the order's status in the notification, which
    leaves out the subscribers of other statuses (``None``: none is left out, each handler decides).

    Returns whether it did. A failed publish leaves the row undispatched for ``notifications_dispatch_pending``.
    """
    names = [subscriber.name for subscriber in signals.subscribers_for(notification_type, order_status)]
    if not names:  # nobody wants it: handed over to all of its subscribers already
        _mark_dispatched(notification_pk)
        return True
    # A subscriber that already handled it (a publish repeated by the sweep) skips it by its receipt.
    if not publish("orders.tasks.notifications_deliver", notification_pk, names):
        return False
    try:
        # On its way: the sweep leaves it to the worker for this long. A message in a queue that outlives
        # the note (a long backlog) is published once more, and its subscribers skip it by their receipts.
        cache.set(_on_the_way_key(notification_pk), 1, settings.NOTIFICATION_REDISPATCH_SECONDS)
    except Exception:
        logger.warning("outbox: the cache did not answer; the sweep may publish pk=%s again", notification_pk)
    return True


def _on_the_way_key(notification_pk: int) -> str:
    return f"outbox:on-the-way:{notification_pk}"


def _on_the_way(notification_pks: list[int]) -> None:
    try:
        cache.set_many(
            {_on_the_way_key(pk): 1 for pk in notification_pks}, settings.NOTIFICATION_REDISPATCH_SECONDS
        )
    except Exception:
        logger.warning(
            "outbox: the cache did not answer; the sweep may publish %d notification(s) again",
            len(notification_pks),
        )


def _mark_dispatched_many(notification_pks: list[int]) -> None:
    if notification_pks:
        Notification.objects.filter(pk__in=notification_pks, dispatched_at__isnull=True).update(
            dispatched_at=timezone.now()
        )


def _mark_dispatched(notification_pk: int) -> None:
    Notification.objects.filter(pk=notification_pk, dispatched_at__isnull=True).update(
        dispatched_at=timezone.now()
    )


def notifications_dispatch_pending(*, now: datetime | None = None, limit: int = DISPATCH_BATCH) -> int:
    """Beat: publish again the notifications never handed over past the grace, in batched deliveries. Returns
    how many it handed over.

    Stops at the first failed publish: the broker is still down, and the next beat tries again.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS)
    pending = (
        Notification.objects.filter(dispatched_at__isnull=True, created_at__lt=cutoff)
        .order_by("created_at", "id")
        .values_list("pk", "type", "payload")[:limit]
    )
    pending = list(pending)
    try:
        on_the_way = cache.get_many([_on_the_way_key(pk) for pk, _, _ in pending])
    except Exception:
        on_the_way = {}  # Redis is gone, and with it every message it held: publish them all again
    return notifications_dispatch(
        entries=[
            (pk, notification_type, _order_status(payload))
            for pk, notification_type, payload in pending
            if _on_the_way_key(pk) not in on_the_way
        ]
    )


def notifications_deliver(*, notification_pk: int, subscriber_names: list[str]) -> list[str]:
    """Run each named subscriber's handler on one notification, in turn, unless it already did; returns the names
    of those that ran.

    Each receipt is written as its handler returns. A handler raising one of its subscriber's ``transient`` errors
    stops the delivery there and the error propagates: the task retries it with backoff, and the subscribers that
    already handled the notification skip it by their receipts. Any other error is logged and left to the
    subscriber's own periodic sweep; the next subscribers still run.
    """
    notification = Notification.objects.filter(pk=notification_pk).first()
    if notification is None:
        return []  # purged after its retention
    handled = set(
        NotificationReceipt.objects.filter(
            notification_id=notification_pk, subscriber__in=subscriber_names
        ).values_list("subscriber", flat=True)
    )
    ran = _deliver_one(notification, subscriber_names, handled)
    # Every subscriber had its turn (a failure for good is left to that subscriber's own sweep).
    _mark_dispatched(notification_pk)
    return ran


class DeliveryInterrupted(Exception):
    """A subscriber failed for now: ``remaining`` (from the notification it failed on) is to be delivered again
    later; the notifications before it were delivered."""

    def __init__(self, *, remaining: list[tuple[int, list[str]]], error: BaseException) -> None:
        super().__init__(f"{len(remaining)} notification(s) left to deliver: {error!r}")
        self.remaining = remaining
        self.error = error


def notifications_deliver_many(*, deliveries: list[tuple[int, list[str] | None]]) -> int:
    """``notifications_deliver`` of many notifications (``(pk, subscriber names)`` each; names ``None``: the
    subscribers that want it now), in turn: the notifications and their receipts read in one statement each,
    each receipt written as its handler returns, the notifications marked dispatched together. Returns how many
    were delivered.

    A transient error (a subscriber's own, or the database's before any subscriber ran) stops the batch there:
    the ones before it are marked dispatched and ``DeliveryInterrupted`` carries the rest (that notification
    included) for a retry, in which the subscribers that already handled it skip it by their receipts. Any
    other error is logged and the next notifications still go: a subscriber's is left to its own sweep (as
    ``notifications_deliver`` leaves it), one of the delivery itself leaves that notification undispatched for
    ``notifications_dispatch_pending``.
    """
    deliveries = [(int(pk), list(names) if names is not None else None) for pk, names in deliveries]
    pks = [pk for pk, _ in deliveries]
    try:
        notifications = Notification.objects.in_bulk(pks)
        handled: dict[int, set[str]] = {}
        for n_pk, name in NotificationReceipt.objects.filter(notification_id__in=pks).values_list(
            "notification_id", "subscriber"
        ):
            handled.setdefault(n_pk, set()).add(name)
    except TRANSIENT_ERRORS as exc:
        raise DeliveryInterrupted(remaining=deliveries, error=exc) from exc
    done: list[int] = []
    for position, (pk, names) in enumerate(deliveries):
        notification = notifications.get(pk)
        if notification is None:
            continue  # purged after its retention
        if names is None:
            names = [
                s.name
                for s in signals.subscribers_for(notification.type, _order_status(notification.payload))
            ]
        try:
            _deliver_one(notification, names, handled.get(pk, set()))
        except signals.transient_errors(names) as exc:
            _mark_delivered(done)
            raise DeliveryInterrupted(remaining=deliveries[position:], error=exc) from exc
        except Exception as exc:
            logger.exception("The delivery of notification pk=%s failed; the sweep publishes it again", pk)
            if isinstance(exc, DatabaseError) and not connection.in_atomic_block:
                connection.close()
            continue
        done.append(pk)
    _mark_delivered(done)
    return len(done)


def _mark_delivered(notification_pks: list[int]) -> None:
    try:
        _mark_dispatched_many(notification_pks)
    except Exception:
        # Left undispatched: the sweep publishes them again once their notes expire, and their subscribers skip
        # them by their receipts.
        logger.warning("outbox: %d delivered notification(s) not marked dispatched", len(notification_pks))
        if not connection.in_atomic_block:
            connection.close()


def _deliver_one(notification: Notification, subscriber_names: list[str], handled: set[str]) -> list[str]:
    """Each named subscriber's handler on ``notification``, in turn, but those in ``handled`` (their receipts);
    the subscribers' own transient errors propagate, the others are logged. Returns the names of those that ran."""
    notification_pk = notification.pk
    ran = []
    for name in subscriber_names:
        subscriber = signals.subscriber(name)
        if subscriber is None:
            logger.warning("No subscriber %r for notification pk=%s", name, notification_pk)
            continue
        if name in handled:
            continue
        try:
            subscriber.handler(notification)
        except subscriber.transient:
            raise
        except Exception as exc:
            logger.exception("Subscriber %s failed on notification pk=%s", name, notification_pk)
            if isinstance(exc, DatabaseError) and not connection.in_atomic_block:
                # The next subscriber starts on a fresh connection, not on one the error may have left unusable.
                connection.close()
            continue
        NotificationReceipt.objects.bulk_create(
            [NotificationReceipt(notification_id=notification_pk, subscriber=name)], ignore_conflicts=True
        )
        ran.append(name)
    return ran


def notification_deliver(*, notification_pk: int, subscriber_name: str, now: bool = False) -> bool:
    """Run one subscriber's handler on one notification unless it already did; returns whether it ran.
    ``now``: the subscriber's handler for a caller that waits for the outcome (``Subscriber.now``), which runs
    even after the other handler did (that one may have only handed the work on); it must be idempotent too.

    The handler's errors propagate (the task retries the transient ones); its receipt is written only once
    it returned, so a crash mid-way means one more delivery, never a lost one.
    """
    subscriber = signals.subscriber(subscriber_name)
    if subscriber is None:
        logger.warning("No subscriber %r for notification pk=%s", subscriber_name, notification_pk)
        return False
    notification = Notification.objects.filter(pk=notification_pk).first()
    if notification is None:
        return False  # purged after its retention
    waits = now and subscriber.now is not None
    # A receipt of the handler that only handed the work on does not stop the caller that waits for it.
    if (
        not waits
        and NotificationReceipt.objects.filter(
            notification_id=notification_pk, subscriber=subscriber_name
        ).exists()
    ):
        return False
    (subscriber.now if waits else subscriber.handler)(notification)
    # Two concurrent deliveries may both finish: the unique receipt keeps one row, neither fails.
    NotificationReceipt.objects.bulk_create(
        [NotificationReceipt(notification_id=notification_pk, subscriber=subscriber_name)],
        ignore_conflicts=True,
    )
    return True


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
