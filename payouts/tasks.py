"""Celery tasks of the payouts app: thin wrappers around services."""

import logging
from dataclasses import asdict

from celery import shared_task

from orders.tasks import MAX_RETRIES, backoff_seconds

from . import services
from .errors import PlatformUnavailable

logger = logging.getLogger(__name__)


@shared_task(name="payouts.tasks.progress_payouts", ignore_result=True)
def progress_payouts() -> dict:
    """Beat: ``ticket_received`` → ``payout_in_process`` → ``scheduled`` → ``paid`` (DECISIONS: order life cycle),
    then the refunds of canceled orders that the refund task did not finish."""
    summary = asdict(services.payouts_progress())
    summary["refunds"] = asdict(services.refunds_sweep())
    return summary


@shared_task(bind=True, name="payouts.tasks.refund_order_charge", acks_late=True, max_retries=MAX_RETRIES)
def refund_order_charge(self, order_pk: int) -> str | None:
    """Refund the card charge of a canceled order; retried with backoff while the platform is unavailable."""
    from orders.models import Order

    order = Order.objects.filter(pk=order_pk).first()
    if order is None:
        return None
    try:
        charge = services.refund_for_order(order=order)
    except PlatformUnavailable as exc:
        logger.warning("Refund of order pk=%s failed for now (%s); retrying", order_pk, exc)
        raise self.retry(exc=exc, countdown=backoff_seconds(self.request.retries))
    return charge.refund_status if charge is not None else None
