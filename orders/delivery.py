"""The worker's side of the outbox (orders/outbox.py): a delivery task runs each notification's subscribers in
turn, and once they all ran writes their receipts and marks the rows dispatched, in one transaction.

``notifications_deliver`` delivers a batch (a confirmation batch's notifications, or those written one at a
time that waited in Redis for one task, ``notifications_pending_take``), or one notification alone, a batch of
one; a notification whose subscriber fails for now leaves the batch and is retried on its own, the others
delivered meanwhile; a database that fails has the task retried with only the notifications not yet delivered.
``notification_deliver`` runs one subscriber on one notification, for a caller that waits for it.
"""

import logging

from django.db import DatabaseError, connection, transaction

from config.core import rawsql, retrying
from config.core.pending import redis_backend
from config.core.retrying import DB_ERRORS, TRANSIENT_ERRORS

from . import dispatch, signals
from .dispatch import (
    PENDING_KEY,
    drain_note_clear,
    mark_dispatched,
    notifications_pending_nudge,
)
from .models import Notification, NotificationReceipt, OrderStatusHistory

logger = logging.getLogger(__name__)


# A batch's notifications with their moves, and the receipts of their subscribers: one statement each, written in
# SQL whose text does not change with the batch's size (the pks as one array parameter), so that the connection
# prepares it once. Built by the ORM, each cost the worker about half a millisecond of CPU to compile, more than
# the rows it read: a delivery batch's fixed cost.
_NOTIFICATION_FIELDS = tuple(Notification._meta.concrete_fields)
_TRANSITION_FIELDS = tuple(OrderStatusHistory._meta.concrete_fields)
_NOTIFICATIONS = rawsql.Select(
    "SELECT "  # noqa: S608 - names from the models
    + ", ".join(
        [f'n."{f.column}"' for f in _NOTIFICATION_FIELDS] + [f'h."{f.column}"' for f in _TRANSITION_FIELDS]
    )
    + f' FROM "{Notification._meta.db_table}" n'
    f' LEFT JOIN "{OrderStatusHistory._meta.db_table}" h ON h.id = n.transition_id'
    " WHERE n.id = ANY(%s::bigint[])",
    _NOTIFICATION_FIELDS + _TRANSITION_FIELDS,
)
_RECEIPTS = (
    f'SELECT notification_id, subscriber FROM "{NotificationReceipt._meta.db_table}"'  # noqa: S608
    " WHERE notification_id = ANY(%s::bigint[])"
)


def notifications_with_transitions(pks: list[int]) -> dict[int, Notification]:
    """``Notification.objects.select_related("transition").in_bulk(pks)``, in one prepared statement."""
    split = len(_NOTIFICATION_FIELDS)
    found = {}
    for row in _NOTIFICATIONS.fetchall([pks]):
        notification = Notification.from_db("default", None, row[:split])
        history = OrderStatusHistory.from_db("default", None, row[split:]) if row[split] is not None else None
        notification._state.fields_cache["transition"] = history
        found[notification.pk] = notification
    return found


def receipts_of(pks: list[int]) -> dict[int, set[str]]:
    """The names of the subscribers that handled each of these notifications, by its pk."""
    handled: dict[int, set[str]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_RECEIPTS, [pks])
        for notification_pk, name in cursor.fetchall():
            handled.setdefault(notification_pk, set()).add(name)
    return handled


def notifications_pending_take(*, limit: int | None = None) -> list[int]:
    """Take up to ``limit`` (``DELIVERY_BATCH``) notifications off the list of those waiting for a batched
    delivery, oldest first, after clearing the note that a delivery task is on its way; publishes another task
    when the list may hold more. Returns their pks; none when Redis does not answer (the sweep
    publishes them once their notes expire)."""
    backend = redis_backend()
    limit = limit or dispatch.DELIVERY_BATCH
    # Cleared before the take: a notification added after it publishes a task of its own.
    drain_note_clear()
    key = backend.make_and_validate_key(PENDING_KEY)
    try:
        taken = backend._cache.get_client(key, write=True).lpop(key, limit) or []
    except Exception:
        logger.warning("outbox: the cache did not answer; the sweep publishes what waits", exc_info=True)
        return []
    if len(taken) >= limit:
        notifications_pending_nudge()  # more may be waiting: another worker may take them meanwhile
    return list(dict.fromkeys(int(pk) for pk in taken))


class DeliveryInterrupted(Exception):
    """A subscriber failed for now: ``remaining`` (from the notification it failed on) is to be delivered again
    later; the notifications before it were delivered."""

    def __init__(self, *, remaining: list[tuple[int, list[str]]], error: BaseException) -> None:
        super().__init__(f"{len(remaining)} notification(s) left to deliver: {error!r}")
        self.remaining = remaining
        self.error = error


def notifications_deliver(
    *, deliveries: list[tuple[int, list[str] | None]], alone: bool = False
) -> dict[int, list[str]]:
    """Run the subscribers of each notification (``(pk, subscriber names)`` each; names ``None``: the subscribers
    that want it now) in turn, each handler unless its receipt says it already ran: the notifications and their
    receipts read in one statement each; once every subscriber had its turn, the receipts of the handlers that
    ran written and the notifications marked dispatched together, in one transaction (a failure for good is left
    to that subscriber's own sweep); a batch that stops writes the receipts of what ran before it stops. Returns
    the names of the subscribers that ran, by the pk of each notification delivered; a notification purged
    after its retention is not.

    In a batch (``orders.tasks.notifications_deliver_many``: a confirmation batch's notifications, or those
    written one at a time that waited in Redis for one task, ``notifications_pending_take``), a subscriber's
    transient error (its endpoint, the mail server or the payment platform did not answer) takes that
    notification out of the batch: it is published alone (``orders.tasks.notifications_deliver``, after the
    first backoff, with the retries of its own) and the batch goes on, so a notification that keeps failing
    never holds back the others. A database error (the next notifications would fail too) stops the batch
    there: the ones before it are marked dispatched and ``DeliveryInterrupted`` carries the rest (that
    notification included) for a retry, in which the subscribers that already handled it skip it by their
    receipts. Any other error is logged and the next notifications still go: a subscriber's is left to its own
    sweep, one of the delivery itself leaves that notification undispatched for
    ``notifications_dispatch_pending``.

    ``alone``: a notification delivered by a task of its own (``orders.tasks.notifications_deliver``), which is
    where a notification out of its batch goes: every error propagates as it is, a subscriber's transient one
    included, stopping the delivery there, and the task retries it with backoff (the subscribers that already
    handled it skip it by their receipts).
    """
    deliveries = [(int(pk), list(names) if names is not None else None) for pk, names in deliveries]
    pks = [pk for pk, _ in deliveries]
    try:
        notifications = notifications_with_transitions(pks)
        handled = receipts_of(pks)
    except TRANSIENT_ERRORS as exc:
        if alone:
            raise
        raise DeliveryInterrupted(remaining=deliveries, error=exc) from exc
    done: dict[int, list[str]] = {}
    receipts: list[NotificationReceipt] = []  # the handlers that ran, recorded together (_record)
    try:
        return _deliver_each(deliveries, notifications, handled, done, receipts, alone=alone)
    except BaseException:
        # Stopped: what ran is recorded, so that a retry skips it; a failure to record it means one more run.
        _receipts_write_logged(receipts)
        raise


def _deliver_each(
    deliveries: list[tuple[int, list[str] | None]],
    notifications: dict[int, Notification],
    handled: dict[int, set[str]],
    done: dict[int, list[str]],
    receipts: list[NotificationReceipt],
    *,
    alone: bool,
) -> dict[int, list[str]]:
    resolved: list[tuple[int, int, Notification, list[str]]] = []
    for position, (pk, names) in enumerate(deliveries):
        notification = notifications.get(pk)
        if notification is None:
            continue  # purged after its retention
        if names is None:
            names = [
                s.name
                for s in signals.subscribers_for(notification.type, signals.notification_status(notification))
            ]
        resolved.append((position, pk, notification, names))
    idle = _idle(resolved, handled)
    for position, pk, notification, names in resolved:
        try:
            done[pk] = _deliver_one(notification, names, handled.get(pk, set()), receipts, idle=idle)
        except Exception as exc:
            if alone:
                raise
            if isinstance(exc, DB_ERRORS):
                # The database itself failed: the next notifications would too. The task tries the rest later.
                _receipts_write_logged(receipts)
                _mark_delivered(list(done))
                raise DeliveryInterrupted(remaining=deliveries[position:], error=exc) from exc
            if isinstance(exc, signals.transient_errors(names)):
                # This notification's subscriber failed for now: it leaves the batch and is tried again on its
                # own, with its own backoff, so that it never holds back the others (delivered now, in this run).
                logger.warning("notification pk=%s failed for now (%r); retried on its own", pk, exc)
                _receipts_write_logged(receipts)  # before its own delivery, which skips what already ran
                dispatch.notification_deliver_alone(
                    notification_pk=pk, subscriber_names=names, countdown=retrying.task_retry_seconds(0)
                )
                continue
            logger.exception("The delivery of notification pk=%s failed; the sweep publishes it again", pk)
            if isinstance(exc, DatabaseError) and not connection.in_atomic_block:
                connection.close()
    try:
        _record(receipts, list(done))
    except Exception:
        if alone:
            raise
        # Each apart, where it can be: a receipt not written means one more run of its handler on a repeat, a
        # notification not marked is published again by the sweep.
        _receipts_write_logged(receipts)
        _mark_delivered(list(done))
    return done


def _idle(
    resolved: list[tuple[int, int, Notification, list[str]]], handled: dict[int, set[str]]
) -> dict[str, set[int]]:
    """For each subscriber that can tell (``Subscriber.idle``), the batch's notifications its handler would do
    nothing for, asked once for the batch. A subscriber that cannot tell now has its handler called for each."""
    wanted: dict[str, list[Notification]] = {}
    for _position, pk, notification, names in resolved:
        for name in names:
            if name not in handled.get(pk, ()):
                wanted.setdefault(name, []).append(notification)
    idle: dict[str, set[int]] = {}
    for name, notifications in wanted.items():
        subscriber = signals.subscriber(name)
        if subscriber is None or subscriber.idle is None:
            continue
        try:
            idle[name] = set(subscriber.idle(notifications))
        except Exception as exc:
            logger.warning("subscriber %s could not tell what it has to do; its handler runs for each", name)
            if isinstance(exc, DatabaseError) and not connection.in_atomic_block:
                connection.close()
    return idle


def _record(receipts: list[NotificationReceipt], notification_pks: list[int]) -> None:
    """The batch's receipts and its notifications marked dispatched, in one transaction: one commit for the
    batch instead of one per handler that ran."""
    with transaction.atomic():
        if receipts:
            # Two deliveries of one notification at once may both finish: the unique receipt keeps one row.
            rawsql.insert_many(receipts, ignore_conflicts=True)
        mark_dispatched(notification_pks)
    receipts.clear()


def _receipts_write_logged(receipts: list[NotificationReceipt]) -> None:
    """The receipts of a batch that stopped, where it can; a receipt not written means one more run of its
    handler on the retry, never a lost delivery."""
    if not receipts:
        return
    try:
        rawsql.insert_many(receipts, ignore_conflicts=True)
        receipts.clear()
    except Exception:
        logger.warning(
            "outbox: %d receipt(s) not written; their handlers run again on the retry", len(receipts)
        )
        receipts.clear()
        if not connection.in_atomic_block:
            connection.close()


def _mark_delivered(notification_pks: list[int]) -> None:
    try:
        mark_dispatched(notification_pks)
    except Exception:
        # Left undispatched: the sweep publishes them again once their notes expire, and their subscribers skip
        # them by their receipts.
        logger.warning("outbox: %d delivered notification(s) not marked dispatched", len(notification_pks))
        if not connection.in_atomic_block:
            connection.close()


def _deliver_one(
    notification: Notification,
    subscriber_names: list[str],
    handled: set[str],
    receipts: list[NotificationReceipt],
    *,
    idle: dict[str, set[int]] | None = None,
) -> list[str]:
    """Each named subscriber's handler on ``notification``, in turn, but those in ``handled`` (their receipts);
    the subscribers' own transient errors propagate, the others are logged. A subscriber that said it has
    nothing to do for it (``idle``) is not called. Appends to ``receipts`` the receipt of each handler that
    returned (or had nothing to do), and returns the names of those."""
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
            if idle is None or notification_pk not in idle.get(name, ()):
                subscriber.handler(notification)
        except subscriber.transient:
            raise
        except Exception as exc:
            logger.exception("Subscriber %s failed on notification pk=%s", name, notification_pk)
            if isinstance(exc, DatabaseError) and not connection.in_atomic_block:
                # The next subscriber starts on a fresh connection, not on one the error may have left unusable.
                connection.close()
            continue
        receipts.append(NotificationReceipt(notification_id=notification_pk, subscriber=name))
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
    notification = notifications_with_transitions([notification_pk]).get(notification_pk)
    if notification is None:
        return False  # purged after its retention
    waits = now and subscriber.now is not None
    # A receipt of the handler that only handed the work on does not stop the caller that waits for it.
    if not waits and subscriber_name in receipts_of([notification_pk]).get(notification_pk, ()):
        return False
    (subscriber.now if waits else subscriber.handler)(notification)
    # Two concurrent deliveries may both finish: the unique receipt keeps one row, neither fails.
    rawsql.insert_many(
        [NotificationReceipt(notification_id=notification_pk, subscriber=subscriber_name)],
        ignore_conflicts=True,
    )
    return True
