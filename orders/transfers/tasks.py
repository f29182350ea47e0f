"""Background work of transfer detection: process an inbound message after its commit, retry the ones
deferred by DNS, and the periodic sweeps (unprocessed messages, raw mail retention)."""

import logging

from celery import shared_task

from config.core.backoff import task_retry_seconds
from orders import signals

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="orders.transfers.tasks.message_process", acks_late=True, max_retries=8)
def message_process(self, message_pk: int) -> str:
    """Authenticate, parse, match and decide one stored message (``orders.transfers.process``)."""
    from .process import message_process as process

    try:
        return process(message_pk=message_pk)
    except signals.TRANSIENT_ERRORS as exc:
        logger.warning("Inbound message pk=%s failed for now (%r); retrying", message_pk, exc)
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))


@shared_task(name="orders.transfers.tasks.raw_purge")
def raw_purge() -> int:
    """Beat: delete the raw mail kept past ``INBOUND_RAW_RETENTION_DAYS`` (``orders.transfers.retention``)."""
    from .retention import raw_purge as purge

    return purge()
