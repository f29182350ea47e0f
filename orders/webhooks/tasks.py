"""Celery wrappers of the webhook services.

Attempts run on the ``webhooks`` queue, or ``webhooks_slow`` for endpoints whose last attempt timed out; the
sweep, the purge and the "endpoint disabled" e-mail run on the default queue, so slow endpoints never
starve them (``task_routes`` in ``config/celery.py``)."""

import logging

from celery import shared_task

from config.core.retrying import RetryingTask

from . import emails, sending, services

logger = logging.getLogger(__name__)


# Above the attempt's own deadline (15 s): a worker is never held longer than this by one delivery, and the
# in-flight window of sending.in_flight_seconds() relies on the hard limit.
SOFT_TIME_LIMIT, TIME_LIMIT = sending.task_time_limits()


@shared_task(
    name="orders.webhooks.tasks.delivery_attempt",
    acks_late=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def delivery_attempt(delivery_pk: int) -> str | None:
    # No Celery retry: a failed attempt schedules the next one itself (the row's next_attempt_at).
    attempt = sending.delivery_attempt(delivery_pk=delivery_pk)
    return attempt.status if attempt is not None else None


@shared_task(
    name="orders.webhooks.tasks.delivery_attempt_slow",
    acks_late=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def delivery_attempt_slow(delivery_pk: int) -> str | None:
    """The same attempt, on the slow lane (``webhooks_slow``): endpoints whose last attempt timed out."""
    attempt = sending.delivery_attempt(delivery_pk=delivery_pk, slow_lane=True)
    return attempt.status if attempt is not None else None


@shared_task(name="orders.webhooks.tasks.deliveries_send_due")
def deliveries_send_due() -> int:
    published = services.deliveries_send_due()
    if published:
        logger.info("Published %d due webhook deliveries", len(published))
    return len(published)


@shared_task(name="orders.webhooks.tasks.deliveries_purge")
def deliveries_purge() -> int:
    deleted = services.deliveries_purge()
    if deleted:
        logger.info("Purged %d webhook deliveries past retention", deleted)
    return deleted


@shared_task(base=RetryingTask, name="orders.webhooks.tasks.endpoint_disabled_email", acks_late=True)
def endpoint_disabled_email(endpoint_pk: int) -> None:
    emails.endpoint_disabled_email(endpoint_pk=endpoint_pk)
