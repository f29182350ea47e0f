"""Celery tasks of the payouts app: thin wrappers around services."""

import logging
from dataclasses import asdict

from celery import shared_task

from config.core.backoff import task_retry_seconds
from orders.tasks import MAX_RETRIES, TRANSIENT_ERRORS

from .errors import PlatformUnavailable
from .services import alerts, order_reactions, progression, refunds

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="payouts.tasks.order_confirm", acks_late=True, max_retries=MAX_RETRIES)
def order_confirm(self, order_pk: int) -> str | None:
    """An order's confirmation published again by the sweeper (the first run reacts to ``order.created``)."""
    try:
        order = order_reactions.order_confirm(order_pk=order_pk)
    except (PlatformUnavailable, *TRANSIENT_ERRORS) as exc:
        logger.warning("Confirmation of order pk=%s failed for now (%r); retrying", order_pk, exc)
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))
    return order.status if order is not None else None


@shared_task(name="payouts.tasks.orders_requeue_unconfirmed")
def orders_requeue_unconfirmed() -> int:
    published = order_reactions.orders_requeue_unconfirmed()
    if published:
        logger.info("Re-published the confirmation of %d order(s)", len(published))
    return len(published)


@shared_task(name="payouts.tasks.payouts_progress", ignore_result=True)
def payouts_progress() -> dict:
    """Beat: ``ticket_received`` → ``payout_in_process`` → ``scheduled`` → ``paid`` (docs/partners/portal.md "Charges and payouts"),
    then the refunds of canceled orders that the refund task did not finish."""
    summary = asdict(progression.payouts_progress())
    summary["refunds"] = asdict(refunds.refunds_sweep())
    return summary


@shared_task(bind=True, name="payouts.tasks.refund_for_order", acks_late=True, max_retries=MAX_RETRIES)
def refund_for_order(self, order_pk: int) -> str | None:
    """Refund the card charge of a canceled order; retried with backoff while the platform is unavailable."""
    from orders.models import Order

    order = Order.objects.filter(pk=order_pk).first()
    if order is None:
        return None
    try:
        charge = refunds.refund_for_order(order=order)
    except (PlatformUnavailable, *TRANSIENT_ERRORS) as exc:
        logger.warning("Refund of order pk=%s failed for now (%r); retrying", order_pk, exc)
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))
    return charge.refund_status if charge is not None else None


@shared_task(bind=True, name="payouts.tasks.payment_alert_send", acks_late=True, max_retries=MAX_RETRIES)
def payment_alert_send(self, kind: str, pk: int) -> bool:
    """E-mail the partner about a declined charge, a failed payout or a failed refund (once per failure)."""
    try:
        return alerts.payment_alert_send(kind=kind, pk=pk)
    except TRANSIENT_ERRORS as exc:
        logger.warning("Payment alert %s pk=%s not sent for now (%r); retrying", kind, pk, exc)
        raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))
