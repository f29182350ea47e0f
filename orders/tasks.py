"""Background work on orders: confirmation, the sweeper that re-publishes lost confirmations, expiry."""

import logging
import random
import smtplib

from celery import shared_task

from payouts.errors import PlatformUnavailable

from . import services

logger = logging.getLogger(__name__)

# Transient: the payment platform or the mail server did not answer. Anything else is a bug or a permanent
# refusal and is not retried blindly.
TRANSIENT_ERRORS = (PlatformUnavailable, smtplib.SMTPException, ConnectionError, TimeoutError)
MAX_RETRIES = 8


def backoff_seconds(retries: int) -> int:
    """10 s, 20 s, 40 s … capped at 10 minutes, with jitter so a platform outage does not end in a stampede."""
    base = min(600, 10 * 2**retries)
    return base + random.randint(0, base // 4)


@shared_task(bind=True, name="orders.tasks.confirm_order", acks_late=True, max_retries=MAX_RETRIES)
def confirm_order(self, order_pk: int) -> str | None:
    try:
        order = services.order_confirm(order_pk=order_pk)
    except TRANSIENT_ERRORS as exc:
        logger.warning("Confirmation of order pk=%s failed for now (%s); retrying", order_pk, exc)
        raise self.retry(exc=exc, countdown=backoff_seconds(self.request.retries))
    return order.status if order is not None else None


@shared_task(bind=True, name="orders.tasks.notify_order_canceled", acks_late=True, max_retries=MAX_RETRIES)
def notify_order_canceled(self, order_pk: int) -> None:
    try:
        services.order_canceled_email(order_pk=order_pk)
    except TRANSIENT_ERRORS as exc:
        raise self.retry(exc=exc, countdown=backoff_seconds(self.request.retries))


@shared_task(name="orders.tasks.sweep_unconfirmed_orders")
def sweep_unconfirmed_orders() -> int:
    published = services.orders_requeue_unconfirmed()
    if published:
        logger.info("Re-published the confirmation of %d order(s)", len(published))
    return len(published)


@shared_task(name="orders.tasks.expire_overdue_orders")
def expire_overdue_orders() -> int:
    expired = services.orders_expire_overdue()
    if expired:
        logger.info("Expired %d overdue order(s): %s", len(expired), ", ".join(expired[:20]))
    cancel_orders_of_canceled_events()
    return len(expired)


@shared_task(name="orders.tasks.cancel_orders_of_canceled_events")
def cancel_orders_of_canceled_events(event_pk: int | None = None) -> int:
    canceled = services.orders_cancel_for_canceled_events(event_pk=event_pk)
    if canceled:
        logger.info("Canceled %d order(s) of canceled events: %s", len(canceled), ", ".join(canceled[:20]))
    return len(canceled)
