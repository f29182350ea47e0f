"""Retries of failed payouts: each is made again as a new attempt (a new idempotency key) to the partner's current
payout account, by staff (the admin's **Retry payout**) or because the partner connected a payout account. The
beat's progression (``progression.payouts_progress``) then starts it at the platform."""

from __future__ import annotations

import logging

from config.core.publish import publish_on_commit
from config.core.statemachine import IllegalStateMove

from ..models import Payout
from .progression import P, payout_transition

logger = logging.getLogger(__name__)


def payout_retry(*, payout: Payout, actor: str, reason: str = "Retried by staff") -> bool:
    """Try a failed payout again, as a new attempt (new idempotency key) to the current account: staff, or the
    partner connecting a payout account (``payouts_retry_for_partner``). Returns whether it was failed (a double
    click, a second staff member or a second connection finds it pending already)."""
    try:
        # Race: two retries at once (staff, a connection) — the state machine's row lock lets one move it
        # failed → pending; the other finds it pending and makes no second attempt.
        payout_transition(
            payout=payout,
            to=P.PENDING,
            actor=actor,
            reason=reason,
            changes=lambda locked: {
                "attempt": locked.attempt + 1,
                "platform_payout_id": "",
                "failure_reason": "",
                "last_error": "",
                "scheduled_for": None,
                "paid_at": None,
                "failure_alerted_at": None,  # the next failure is a new event with its own alert
            },
        )
    except IllegalStateMove:
        return False
    logger.info("payout retry requested", extra={"payout_pk": payout.pk, "actor": actor})
    publish_on_commit("payouts.tasks.payouts_progress")  # lost with the broker: the next beat runs it anyway
    return True


def payouts_retry_for_partner(*, partner_pk: int, actor: str) -> int:
    """The partner connected a payout account: each of its failed payouts is made again, once, as a new attempt
    to that account (``payout_retry``). Returns how many were retried."""
    failed = Payout.objects.filter(partner_id=partner_pk, status=P.FAILED).order_by("pk")
    return sum(
        payout_retry(payout=payout, actor=actor, reason="Retried: the partner connected a payout account")
        for payout in failed
    )
