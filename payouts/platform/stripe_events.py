"""Stripe's events, verified with the library: the ``Stripe-Signature`` header checked against the endpoint's
signing secrets (HMAC-SHA256 of ``"{t}.{body}"``, at most ``tolerance`` seconds old), then the event read into
what the services need, in the interface's own terms (a payout's state, the PaymentIntent a charge event names,
a dispute).

The events the service acts on (docs/operations/payments-stripe.md "Events"):
- ``payout.paid``, ``payout.failed`` (a connected account's payout): the payout's new state;
- ``charge.refunded``: the refund of that charge's PaymentIntent settled (asked again at Stripe);
- ``charge.dispute.created``, ``charge.dispute.closed``: a dispute opens and closes a staff case.
Any other type is stored and acknowledged, and does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import stripe

from .base import PayoutState
from .stripe import payout_state

PAYOUT_EVENTS = frozenset({"payout.paid", "payout.failed"})
REFUND_EVENTS = frozenset({"charge.refunded"})
DISPUTE_EVENTS = frozenset({"charge.dispute.created", "charge.dispute.closed"})
HANDLED_EVENTS = PAYOUT_EVENTS | REFUND_EVENTS | DISPUTE_EVENTS


class EventRefused(Exception):
    """Not a genuine Stripe event: no or a wrong signature, too old, or not an event at all."""


@dataclass(frozen=True)
class DisputeInfo:
    dispute_id: str
    payment_intent_id: str
    amount: Decimal
    currency: str
    reason: str
    status: str  # Stripe's: warning_needs_response, needs_response, under_review, won, lost …
    evidence_due_by: datetime | None


@dataclass(frozen=True)
class VerifiedEvent:
    event_id: str
    type: str
    account: str  # the connected account it happened on; "" for the platform's own
    livemode: bool
    occurred_at: datetime
    payload: dict[str, Any]
    payout: PayoutState | None = None  # payout.*
    payment_intent_id: str = ""  # charge.refunded
    dispute: DisputeInfo | None = None  # charge.dispute.*


def _id(value: str | stripe.PaymentIntent | None) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else value.id


def _at(value: int | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=UTC) if value else None


def _major_units(minor: int) -> Decimal:
    return (Decimal(minor) / 100).quantize(Decimal("0.01"))


def verify_event(*, payload: bytes, signature: str, secrets: Sequence[str], tolerance: int) -> VerifiedEvent:
    """The event in ``payload`` if ``signature`` is Stripe's for one of ``secrets`` (the platform's and the
    Connect endpoint's, or an old and a new one during a roll); ``EventRefused`` otherwise."""
    if not secrets:
        raise EventRefused("STRIPE_WEBHOOK_SECRET is not set: no Stripe event can be verified.")
    event: stripe.Event | None = None
    for secret in secrets:
        try:
            event = stripe.Webhook.construct_event(payload, signature, secret, tolerance)
        except stripe.SignatureVerificationError:
            continue
        except ValueError as exc:  # signed, but not JSON (or not a snapshot event)
            raise EventRefused(f"The body is not a Stripe event: {exc}") from exc
        break
    if event is None:
        raise EventRefused("No valid Stripe-Signature for this endpoint's secrets (or it is too old).")
    # Read as a dict first: Stripe leaves ``account`` out of the platform's own events, and a signed body that
    # is no event at all must be refused rather than fail on a missing attribute.
    fields = event.to_dict()
    event_id, event_type, created = fields.get("id"), fields.get("type"), fields.get("created")
    if fields.get("object") != "event" or not isinstance(event_id, str) or not isinstance(event_type, str):
        raise EventRefused("The body is not a Stripe event.")
    account = fields.get("account")
    return VerifiedEvent(
        event_id=event_id,
        type=event_type,
        account=account if isinstance(account, str) else "",
        livemode=fields.get("livemode") is True,
        occurred_at=_at(created if isinstance(created, int) else None) or datetime.now(tz=UTC),
        payload=fields,
        **_read(event),
    )


def _read(event: stripe.Event) -> dict[str, Any]:
    """What a handled event says, from the object it carries; nothing for the others (nor for an object that
    lacks a field this version of the API always sends: the event is kept, and the poll reconciles)."""
    try:
        return _read_object(event)
    except (AttributeError, KeyError, TypeError, ValueError):
        return {}


def _read_object(event: stripe.Event) -> dict[str, Any]:
    obj = event.data.object
    if event.type in PAYOUT_EVENTS and isinstance(obj, stripe.Payout):
        return {"payout": payout_state(obj)}
    if event.type in REFUND_EVENTS and isinstance(obj, stripe.Charge):
        return {"payment_intent_id": _id(obj.payment_intent)}
    if event.type in DISPUTE_EVENTS and isinstance(obj, stripe.Dispute):
        intent = _id(obj.payment_intent)
        return {
            "payment_intent_id": intent,
            "dispute": DisputeInfo(
                dispute_id=obj.id,
                payment_intent_id=intent,
                amount=_major_units(obj.amount),
                currency=obj.currency.upper(),
                reason=obj.reason,
                status=str(obj.status),
                evidence_due_by=_at(obj.evidence_details.due_by if obj.evidence_details else None),
            ),
        }
    return {}
