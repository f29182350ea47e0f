"""The publisher's side of the outbox (orders/outbox.py writes the notifications): after commit a notification
is handed to the subscribers of ``orders.signals`` that want it (their types and the order's new status) by a
delivery task (orders/delivery.py), and the cache notes that it is on the way. Deliveries are batched, one task
for many notifications:

- notifications written together (a confirmation batch's) are published as one ``notifications_deliver_many``
  task (``notifications_dispatch``, ``DELIVERY_BATCH`` per message);
- a notification written alone (an order's creation, one transition) joins a list in Redis, and one task is
  published unless one is already on its way, which takes the list when it starts
  (``notification_dispatch_coalesced``): a lone order's task is published at once, a burst's are a few.
  While Redis does not answer, each is published alone.

``notifications_dispatch_pending`` (beat) publishes again every row not dispatched past the grace whose message
is not known to be on the way: one that never reached the broker, and one the broker lost with Redis (the note
in the cache, and the list, went with it).
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.redis import RedisCache
from django.db import connection, transaction
from django.utils import timezone

from config.api.ratelimit import pipelined
from config.core.pending import redis_backend
from config.core.publish import publish

from . import signals
from .models import Notification

logger = logging.getLogger(__name__)

# How many rows one sweep publishes again.
DISPATCH_BATCH = 500
# How many notifications one batched delivery task carries.
DELIVERY_BATCH = 50
# With Redis: the notifications written one at a time waiting for a batched delivery (their pks, oldest first),
# and the note that a task taking them is on its way (``notification_dispatch_coalesced``).
PENDING_KEY = "outbox:pending"
DRAIN_NOTE_KEY = "outbox:deliveries-waiting"


def notification_dispatch_after_commit(*, notification: Notification) -> None:
    """Hand ``notification`` to the subscribers once the transaction that wrote it commits, coalesced with the
    other notifications written one at a time meanwhile (``notification_dispatch_coalesced``)."""
    pk, notification_type = notification.pk, notification.type
    status = signals.notification_status(notification)
    transaction.on_commit(
        lambda: notification_dispatch_coalesced(
            notification_pk=pk, notification_type=notification_type, order_status=status
        )
    )


def notifications_dispatch_after_commit(*, notifications: list[Notification]) -> None:
    """Hand ``notifications`` (written together) to their subscribers in batched deliveries once the
    transaction that wrote them commits (``notifications_dispatch``)."""
    entries = [(n.pk, n.type, signals.notification_status(n)) for n in notifications]
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
    mark_dispatched(nobody)
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
    publishes another). The task takes the list ``NOTIFICATION_DELIVERY_GATHER_SECONDS`` after it was published
    (0.1 s): a busy web publishes one task per such window, not one per order (a worker that takes the list at
    once would otherwise leave every next order to publish its own). A lone notification's task takes it after
    the window; a burst publishes a few, each taking up to ``DELIVERY_BATCH``.

    When Redis does not answer, the notification is published alone (``notification_dispatch``). Returns whether it was handed over.

    Lost on the way: a failed publish takes this notification's on-the-way note off again (the sweep publishes it
    once the grace has passed; a later task still finds it in the list, and its subscribers skip it by their
    receipts) and the task's note, so the next notification publishes again and its task takes the ones that
    counted on the failed one meanwhile (without a next one, the sweep publishes them once their notes expire,
    ``NOTIFICATION_REDISPATCH_SECONDS``). The list lost with Redis goes with the notes; a list taken by a worker
    that died before delivering keeps its notes until they expire, after which the sweep publishes them again.
    """
    names = [subscriber.name for subscriber in signals.subscribers_for(notification_type, order_status)]
    if not names:
        mark_dispatched([notification_pk])
        return True
    backend = redis_backend()
    try:
        noted = _pending_add(backend, notification_pk)
    except Exception:
        logger.warning("outbox: the cache did not answer; publishing pk=%s alone", notification_pk)
        return notification_dispatch(
            notification_pk=notification_pk, notification_type=notification_type, order_status=order_status
        )
    gather = settings.NOTIFICATION_DELIVERY_GATHER_SECONDS
    if not noted or publish("orders.tasks.notifications_deliver_many", countdown=gather):
        return True  # a task is on its way: it takes this one with the others
    drain_note_clear()  # nothing on its way after all: the next notification tries again
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
    drain_note_clear()  # nothing on its way after all: the next notification tries again
    return False


def drain_note_clear() -> None:
    try:
        cache.delete(DRAIN_NOTE_KEY)
    except Exception:
        logger.warning("outbox: the cache did not answer; the delivery note expires by itself")


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
        mark_dispatched([notification_pk])
        return True
    return notification_deliver_alone(notification_pk=notification_pk, subscriber_names=names)


def notification_deliver_alone(
    *, notification_pk: int, subscriber_names: list[str], countdown: float | None = None
) -> bool:
    """Publish one notification's delivery to ``subscriber_names`` as a task of its own (after ``countdown``
    seconds), with its on-the-way note; returns whether the broker took it. Also how a notification whose
    subscriber failed for now leaves its batch (``delivery.notifications_deliver``)."""
    # A subscriber that already handled it (a publish repeated by the sweep) skips it by its receipt.
    if not publish(
        "orders.tasks.notifications_deliver", notification_pk, subscriber_names, countdown=countdown
    ):
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


# One statement whatever the number of rows (the pks as one array parameter): prepared once per connection.
_MARK_DISPATCHED = (
    f'UPDATE "{Notification._meta.db_table}" SET dispatched_at = %s'  # noqa: S608 - the model's table
    " WHERE id = ANY(%s::bigint[]) AND dispatched_at IS NULL"
)


def mark_dispatched(notification_pks: list[int]) -> None:
    """Mark the rows of ``notification_pks`` not marked yet handed over to all of their subscribers."""
    if notification_pks:
        with connection.cursor() as cursor:
            cursor.execute(_MARK_DISPATCHED, [timezone.now(), list(notification_pks)])


def notifications_dispatch_pending(*, now: datetime | None = None, limit: int = DISPATCH_BATCH) -> int:
    """Beat: publish again the notifications never handed over past the grace, in batched deliveries. Returns
    how many it handed over.

    Stops at the first failed publish: the broker is still down, and the next beat tries again.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS)
    pending = list(
        Notification.objects.filter(dispatched_at__isnull=True, created_at__lt=cutoff)
        .select_related("transition")
        .defer("payload")
        .order_by("created_at", "id")[:limit]
    )
    try:
        on_the_way = cache.get_many([_on_the_way_key(n.pk) for n in pending])
    except Exception:
        on_the_way = {}  # Redis is gone, and with it every message it held: publish them all again
    return notifications_dispatch(
        entries=[
            (n.pk, n.type, signals.notification_status(n))
            for n in pending
            if _on_the_way_key(n.pk) not in on_the_way
        ]
    )
