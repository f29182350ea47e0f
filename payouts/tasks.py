"""Celery tasks of the payouts app: thin wrappers around services."""

import logging
from dataclasses import asdict

from celery import shared_task

from config.core.retrying import RetryingTask

from .errors import PlatformUnavailable
from .lifecycle import confirmation
from .services import alerts, progression, refunds, totals

logger = logging.getLogger(__name__)


# The payment platform's outage is worth another try too.
PLATFORM_TRANSIENT = (PlatformUnavailable,)


@shared_task(
    base=RetryingTask, name="payouts.tasks.order_confirm", acks_late=True, transient=PLATFORM_TRANSIENT
)
def order_confirm(order_pk: int) -> str | None:
    """An order's confirmation published again by the sweeper (the first run reacts to ``order.created``)."""
    order = confirmation.order_confirm(order_pk=order_pk)
    return order.status if order is not None else None


@shared_task(base=RetryingTask, name="payouts.tasks.orders_confirm_batch", acks_late=True)
def orders_confirm_batch() -> dict:
    """Confirm up to ``ORDER_CONFIRMATION_BATCH`` waiting orders (published by the orders' nudges)."""
    outcome = confirmation.orders_confirm_batch()
    return {
        "claimed": outcome.claimed,
        "confirmed": len(outcome.confirmed),
        "canceled": len(outcome.canceled),
        "retried": len(outcome.retried),
        "failed": len(outcome.failed),
    }


@shared_task(name="payouts.tasks.orders_requeue_unconfirmed")
def orders_requeue_unconfirmed() -> int:
    published = confirmation.orders_requeue_unconfirmed()
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


@shared_task(name="payouts.tasks.refunds_sweep", ignore_result=True)
def refunds_sweep() -> dict:
    """Beat, hourly: the refund sweep over every canceled order, however long ago it was canceled (the payout
    run's sweep reads the last day's cancels)."""
    return asdict(refunds.refunds_sweep(every_cancel=True))


@shared_task(
    base=RetryingTask, name="payouts.tasks.refund_for_order", acks_late=True, transient=PLATFORM_TRANSIENT
)
def refund_for_order(order_pk: int) -> str | None:
    """Refund the card charge of a canceled order; retried with backoff while the platform is unavailable."""
    from orders.models import Order

    order = Order.objects.filter(pk=order_pk).first()
    if order is None:
        return None
    charge = refunds.refund_for_order(order=order)
    return charge.refund_status if charge is not None else None


@shared_task(base=RetryingTask, name="payouts.tasks.payment_alert_send", acks_late=True)
def payment_alert_send(kind: str, pk: int) -> bool:
    """E-mail the partner about a declined charge, a failed payout or a failed refund (once per failure)."""
    return alerts.payment_alert_send(kind=kind, pk=pk)


@shared_task(
    name="payouts.tasks.payout_totals_compact", ignore_result=True, soft_time_limit=60, time_limit=90
)
def payout_totals_compact() -> dict | None:
    """Beat: each partner's payout totals folded into one row per status (``payouts.services.totals``)."""
    outcome = totals.payout_totals_compact()
    return asdict(outcome) if outcome is not None else None
