"""Celery tasks of the payouts app: thin wrappers around services."""

from dataclasses import asdict

from celery import shared_task

from . import services


@shared_task(name="payouts.tasks.progress_payouts", ignore_result=True)
def progress_payouts() -> dict:
    """Beat: ``ticket_received`` → ``payout_in_process`` → ``scheduled`` → ``paid`` (DECISIONS: order life cycle)."""
    return asdict(services.payouts_progress())
