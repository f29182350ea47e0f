"""The payment platform's events, whatever the platform: verified and read by the platform's own folder (Stripe's:
``payouts/platform/stripe/events.py``, behind ``POST /payments/stripe/events``) into a ``VerifiedEvent``, then
stored here once by their id and acted on through the same services the minute poll and the refund sweep use.

- a payout's new state (Stripe's ``payout.paid`` / ``payout.failed``): the payout follows the platform
  (``progression.payout_follow_platform``), the order walks the payout path, a failure alerts the partner and
  joins the staff's failed payouts;
- a refund settled (``charge.refunded``): the owed refund is settled now (``refunds.refund_follow_platform``);
- a dispute opened or closed (``charge.dispute.created`` / ``charge.dispute.closed``): the staff case opens (and
  the partner is alerted) or closes (``disputes``), whichever of the two arrives first.

An event delivered twice finds its row and moves nothing; one that fails to process stays unprocessed and the
platform delivers it again (the answer is a 500). Events are a shortcut, not the only path: the minute poll
still asks the platform about every payout in flight, and the refund sweep about every pending refund, so a
missed event only delays a move.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import PlatformEvent
from ..platform.base import (
    EVENT_DISPUTE_CLOSED,
    EVENT_DISPUTE_OPENED,
    EVENT_PAYOUT,
    EVENT_REFUND,
    VerifiedEvent,
)
from . import disputes, progression, refunds

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Received:
    event: PlatformEvent
    duplicate: bool  # delivered before: nothing moved this time


def platform_event_receive(*, platform: str, event: VerifiedEvent) -> Received:
    """Store a genuine event of ``platform`` once, and process it (unless a delivery before did)."""
    stored, created = _store(platform, event)
    if stored.processed_at is not None:
        return Received(event=stored, duplicate=True)
    return Received(
        event=platform_event_process(platform=platform, event_pk=stored.pk, verified=event),
        duplicate=not created,
    )


def _store(platform: str, verified: VerifiedEvent) -> tuple[PlatformEvent, bool]:
    try:
        with transaction.atomic():
            # Race: the platform delivering one event twice at once — the unique event id lets one insert win.
            return (
                PlatformEvent.objects.create(
                    platform=platform,
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


def platform_event_process(*, platform: str, event_pk: int, verified: VerifiedEvent) -> PlatformEvent:
    """Act on a stored event once: its moves and its ``processed_at`` commit together, so a second delivery
    (or one racing this) finds it processed and moves nothing. An error rolls both back and propagates."""
    with transaction.atomic():
        # Race: two deliveries of one event processed at once — the row lock lets one act; the other then
        # finds it processed.
        event = PlatformEvent.objects.select_for_update().get(pk=event_pk)
        if event.processed_at is not None:
            return event
        event.outcome = _act(platform, verified)[:255]
        event.processed_at = timezone.now()
        event.save(update_fields=["outcome", "processed_at"])
    logger.info(
        "payment platform event processed",
        extra={"event_id": event.event_id, "event_type": event.type, "outcome": event.outcome},
    )
    return event


def _act(platform: str, event: VerifiedEvent) -> str:
    if event.kind == EVENT_PAYOUT:
        if event.payout is None:
            return "unreadable payout: left to the poll"
        step = progression.payout_follow_platform(platform=platform, state=event.payout)
        if step is None:
            return f"payout {event.payout.payout_id}: none in flight here, nothing moved"
        return (
            f"payout {event.payout.payout_id} {event.payout.status}: order moved {step.orders_moved} step(s)"
        )
    if event.kind == EVENT_REFUND:
        return refunds.refund_follow_platform(platform=platform, charge_id=event.charge_id)
    if event.kind in (EVENT_DISPUTE_OPENED, EVENT_DISPUTE_CLOSED):
        if event.dispute is None:
            return "unreadable dispute"
        dispute = disputes.dispute_follow_platform(
            platform=platform, info=event.dispute, closed=event.kind == EVENT_DISPUTE_CLOSED
        )
        return f"dispute case {dispute.pk} {dispute.status}" if dispute else "no charge of ours disputed"
    return "not an event the service acts on"
