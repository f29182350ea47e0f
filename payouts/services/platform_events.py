"""The payment platform's events (``POST /payments/stripe/events``): verified, stored once by their id, then
acted on through the same services the minute poll and the refund sweep use.

- ``payout.paid`` / ``payout.failed``: the payout follows the platform (``progression.payout_follow_platform``),
  the order walks the payout path, a failure alerts the partner and joins the staff's failed payouts;
- ``charge.refunded``: the owed refund is settled now (``refunds.refund_follow_platform``);
- ``charge.dispute.created`` / ``charge.dispute.closed``: the staff case opens (and the partner is alerted) or
  closes (``disputes``), whichever of the two arrives first.

An event delivered twice finds its row and moves nothing; one that fails to process stays unprocessed and the
platform delivers it again (the answer is a 500). Events are a shortcut, not the only path: the minute poll
still asks the platform about every payout in flight, and the refund sweep about every pending refund, so a
missed event only delays a move.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import PlatformEvent
from ..platform.stripe_events import (
    DISPUTE_EVENTS,
    PAYOUT_EVENTS,
    REFUND_EVENTS,
    VerifiedEvent,
    verify_event,
)
from . import disputes, progression, refunds

logger = logging.getLogger(__name__)

STRIPE = "stripe"


@dataclass(frozen=True)
class Received:
    event: PlatformEvent
    duplicate: bool  # delivered before: nothing moved this time


def stripe_event_receive(*, payload: bytes, signature: str) -> Received:
    """Verify a delivery (``EventRefused`` for anything Stripe did not sign with one of
    ``STRIPE_WEBHOOK_SECRET`` within ``STRIPE_WEBHOOK_TOLERANCE_SECONDS``), store it once, and process it."""
    verified = verify_event(
        payload=payload,
        signature=signature,
        secrets=[secret for secret in settings.STRIPE_WEBHOOK_SECRET if secret],
        tolerance=settings.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
    )
    event, created = _store(verified)
    if event.processed_at is not None:
        return Received(event=event, duplicate=True)
    return Received(event=platform_event_process(event_pk=event.pk, verified=verified), duplicate=not created)


def _store(verified: VerifiedEvent) -> tuple[PlatformEvent, bool]:
    try:
        with transaction.atomic():
            # Race: Stripe delivering one event twice at once — the unique event id lets one insert win.
            return (
                PlatformEvent.objects.create(
                    platform=STRIPE,
                    event_id=verified.event_id,
                    type=verified.type[:100],
                    account=verified.account[:100],
                    livemode=verified.livemode,
                    occurred_at=verified.occurred_at,
                    payload=verified.payload,
                ),
                True,
            )
    except IntegrityError:
        return PlatformEvent.objects.get(event_id=verified.event_id), False


def platform_event_process(*, event_pk: int, verified: VerifiedEvent) -> PlatformEvent:
    """Act on a stored event once: its moves and its ``processed_at`` commit together, so a second delivery
    (or one racing this) finds it processed and moves nothing. An error rolls both back and propagates."""
    with transaction.atomic():
        # Race: two deliveries of one event processed at once — the row lock lets one act; the other then
        # finds it processed.
        event = PlatformEvent.objects.select_for_update().get(pk=event_pk)
        if event.processed_at is not None:
            return event
        event.outcome = _act(verified)[:255]
        event.processed_at = timezone.now()
        event.save(update_fields=["outcome", "processed_at"])
    logger.info(
        "payment platform event processed",
        extra={"event_id": event.event_id, "event_type": event.type, "outcome": event.outcome},
    )
    return event


def _act(event: VerifiedEvent) -> str:
    if event.type in PAYOUT_EVENTS:
        if event.payout is None:
            return "unreadable payout: left to the poll"
        step = progression.payout_follow_platform(platform=STRIPE, state=event.payout)
        if step is None:
            return f"payout {event.payout.payout_id}: none in flight here, nothing moved"
        return (
            f"payout {event.payout.payout_id} {event.payout.status}: order moved {step.orders_moved} step(s)"
        )
    if event.type in REFUND_EVENTS:
        return refunds.refund_follow_platform(platform=STRIPE, charge_id=event.payment_intent_id)
    if event.type in DISPUTE_EVENTS:
        if event.dispute is None:
            return "unreadable dispute"
        dispute = disputes.dispute_follow_platform(
            platform=STRIPE, info=event.dispute, closed=event.type == "charge.dispute.closed"
        )
        return f"dispute case {dispute.pk} {dispute.status}" if dispute else "no charge of ours disputed"
    return "not an event the service acts on"
