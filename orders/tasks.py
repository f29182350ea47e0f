"""Background work on orders: delivering notifications to subscribers, the outbox sweep and purge, the
cancel e-mail, expiry."""

import logging

from celery import shared_task

from config.core.backoff import task_retry_seconds

from . import outbox, services, signals

logger = logging.getLogger(__name__)

# Transient: the database connection, the network or the mail server failed for now. Anything else is a
# bug or a permanent refusal and is not retried blindly.
TRANSIENT_ERRORS = signals.TRANSIENT_ERRORS
MAX_RETRIES = 8


@shared_task(bind=True, name="orders.tasks.notification_deliver", acks_late=True, max_retries=MAX_RETRIES)
def notification_deliver(self, notification_pk: int, subscriber_name: str) -> bool:
    """One notification to one subscriber of ``orders.signals``; its transient errors are retried."""
    subscriber = signals.subscriber(subscriber_name)
    transient = subscriber.transient if subscriber is not None else TRANSIENT_ERRORS
    try:
        return outbox.notification_deliver(notification_pk=notification_pk, subscriber_name=subscriber_name)
    except transient as exc:
        logger.warning(
            "Notification pk=%s to %s failed for now (%r); retrying", notification_pk, subscriber_name, exc
        )
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))


@shared_task(bind=True, name="orders.tasks.notifications_deliver", acks_late=True, max_retries=MAX_RETRIES)
def notifications_deliver(self, notification_pk: int, subscriber_names: list[str]) -> list[str]:
    """One notification to each of its subscribers, in turn (one message per notification rather than one per
    subscriber). An error that is transient for the database or for the subscriber that raised it retries the
    delivery with backoff; the subscribers that already handled it skip it then."""
    transient = tuple(
        {error for name in subscriber_names if (s := signals.subscriber(name)) for error in s.transient}
        | set(TRANSIENT_ERRORS)
    )
    try:
        return outbox.notifications_deliver(
            notification_pk=notification_pk, subscriber_names=subscriber_names
        )
    except transient as exc:
        logger.warning("Notification pk=%s failed for now (%r); retrying", notification_pk, exc)
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))


@shared_task(name="orders.tasks.notifications_dispatch_pending")
def notifications_dispatch_pending() -> int:
    dispatched = outbox.notifications_dispatch_pending()
    if dispatched:
        logger.info("Handed over %d notification(s) that had not reached the broker", dispatched)
    return dispatched


@shared_task(name="orders.tasks.notifications_purge")
def notifications_purge() -> int:
    purged = outbox.notifications_purge()
    if purged:
        logger.info("Purged %d notification(s) past their retention", purged)
    return purged


@shared_task(bind=True, name="orders.tasks.order_canceled_email", acks_late=True, max_retries=MAX_RETRIES)
def order_canceled_email(self, order_pk: int) -> None:
    try:
        services.order_canceled_email(order_pk=order_pk)
    except TRANSIENT_ERRORS as exc:
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))


@shared_task(name="orders.tasks.orders_expire_overdue")
def orders_expire_overdue() -> int:
    expired = services.orders_expire_overdue()
    if expired:
        logger.info("Expired %d overdue order(s): %s", len(expired), ", ".join(expired[:20]))
    orders_cancel_for_canceled_events()
    return len(expired)


@shared_task(name="orders.tasks.orders_cancel_for_canceled_events")
def orders_cancel_for_canceled_events(event_pk: int | None = None) -> int:
    canceled = services.orders_cancel_for_canceled_events(event_pk=event_pk)
    if canceled:
        logger.info("Canceled %d order(s) of canceled events: %s", len(canceled), ", ".join(canceled[:20]))
    return len(canceled)
