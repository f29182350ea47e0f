"""Stripe's events, verified with the library: the ``Stripe-Signature`` header checked against the endpoint's
signing secrets (HMAC-SHA256 of ``"{t}.{body}"``, at most ``tolerance`` seconds old), then the event read into
what the services need, in the interface's own terms (``VerifiedEvent``: a payout's state, the PaymentIntent a
charge event names, a dispute), and handed to the shared handling (``payouts.services.platform_events``: stored
once, acted on).

The events the service acts on (docs/operations/payments-stripe.md "Events"):
- ``payout.paid``, ``payout.failed`` (a connected account's payout): the payout's new state;
- ``charge.refunded``: the refund of that charge's PaymentIntent settled (asked again at Stripe);
- ``charge.dispute.created``, ``charge.dispute.closed``: a dispute opens and closes a staff case.
Any other type is stored and acknowledged, and does nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import stripe
from django.conf import settings

from ...services.platform_events import Received, platform_event_receive
from ..base import (
    EVENT_DISPUTE_CLOSED,
    EVENT_DISPUTE_OPENED,
    EVENT_PAYOUT,
    EVENT_REFUND,
    DisputeInfo,
    VerifiedEvent,
)
from .backend import payout_state

NAME = "stripe"
PAYOUT_EVENTS = frozenset({"payout.paid", "payout.failed"})
REFUND_EVENTS = frozenset({"charge.refunded"})
DISPUTE_EVENTS = frozenset({"charge.dispute.created", "charge.dispute.closed"})
HANDLED_EVENTS = PAYOUT_EVENTS | REFUND_EVENTS | DISPUTE_EVENTS
# What each handled type asks of the service.
KINDS = {
    "payout.paid": EVENT_PAYOUT,
    "payout.failed": EVENT_PAYOUT,
    "charge.refunded": EVENT_REFUND,
    "charge.dispute.created": EVENT_DISPUTE_OPENED,
    "charge.dispute.closed": EVENT_DISPUTE_CLOSED,
}
EVENT_ID_MAX_LENGTH = 255  # PlatformEvent.event_id
MAX_MINOR_AMOUNT = 10**12  # Dispute.amount: 12 digits with 2 decimals
LATEST_TIMESTAMP = 253402300799  # 9999-12-31T23:59:59Z: later is no time a datetime holds


class EventRefused(Exception):
    """Not a genuine Stripe event: no or a wrong signature, too old, or not an event at all."""


def stripe_event_receive(*, payload: bytes, signature: str) -> Received:
    """Verify a delivery (``EventRefused`` for anything Stripe did not sign with one of
    ``STRIPE_WEBHOOK_SECRET`` within ``STRIPE_WEBHOOK_TOLERANCE_SECONDS``), store it once, and process it."""
    verified = verify_event(
        payload=payload,
        signature=signature,
        secrets=[secret for secret in settings.STRIPE_WEBHOOK_SECRET if secret],
        tolerance=settings.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
    )
    return platform_event_receive(platform=NAME, event=verified)


def _id(value: str | stripe.PaymentIntent | None) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else value.id


def _at(value: object) -> datetime | None:
    """A Unix time as a datetime; ``None`` for anything that is not a plausible one."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < LATEST_TIMESTAMP:
        return None
    return datetime.fromtimestamp(value, tz=UTC)


def _major_units(minor: int) -> Decimal:
    return (Decimal(minor) / 100).quantize(Decimal("0.01"))


# Stripe's events nest a few levels (event → data → object → its sub-objects); deeper is no event of theirs.
MAX_DEPTH = 32


def verify_event(*, payload: bytes, signature: str, secrets: Sequence[str], tolerance: int) -> VerifiedEvent:
    """The event in ``payload`` if ``signature`` is Stripe's for one of ``secrets`` (the platform's and the
    Connect endpoint's, or an old and a new one during a roll); ``EventRefused`` otherwise, also for a signed
    body that is not an event (not JSON, not an object, no id or type, nested past ``MAX_DEPTH``)."""
    if not secrets:
        raise EventRefused("STRIPE_WEBHOOK_SECRET is not set: no Stripe event can be verified.")
    if not any(_signed(payload, signature, secret, tolerance) for secret in secrets):
        raise EventRefused("No valid Stripe-Signature for this endpoint's secrets (or it is too old).")
    # Read by the service itself, not by the library's ``construct_event``: that one fails with an
    # AttributeError on a signed body that is valid JSON but no object.
    try:
        fields = json.loads(payload, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested past the parser's limit
        raise EventRefused("The body is not a Stripe event: not JSON.") from exc
    if not isinstance(fields, dict) or _depth(fields) > MAX_DEPTH:
        raise EventRefused("The body is not a Stripe event.")
    fields = _storable(fields)
    event_id, event_type, created = fields.get("id"), fields.get("type"), fields.get("created")
    if (
        fields.get("object") != "event"
        or not isinstance(event_id, str)
        or not isinstance(event_type, str)
        or not 0 < len(event_id) <= EVENT_ID_MAX_LENGTH
    ):
        raise EventRefused("The body is not a Stripe event.")
    event = stripe.Event.construct_from(fields, None)
    account = fields.get("account")
    return VerifiedEvent(
        event_id=event_id,
        type=event_type,
        account=account if isinstance(account, str) else "",
        livemode=fields.get("livemode") is True,
        occurred_at=_at(created) or datetime.now(tz=UTC),
        payload=fields,
        kind=KINDS.get(event_type, ""),
        **_read(event),
    )


def _signed(payload: bytes, signature: str, secret: str, tolerance: int) -> bool:
    try:
        return bool(stripe.WebhookSignature.verify_header(payload, signature, secret, tolerance))
    except stripe.SignatureVerificationError:
        return False
    except ValueError:  # a body that is not UTF-8 cannot carry Stripe's signature
        return False


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is no JSON number")  # NaN, Infinity: no database column holds them


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _depth(value: Any) -> int:
    """How deep ``value`` nests, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _storable(value: Any) -> Any:
    """``value`` without what PostgreSQL refuses in text and jsonb: NUL characters and lone surrogates (Stripe's
    strings never hold them)."""
    if isinstance(value, str):
        return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")  # and no lone surrogate
    if isinstance(value, dict):
        return {_storable(key): _storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value


def _read(event: stripe.Event) -> dict[str, Any]:
    """What a handled event says, from the object it carries; nothing for the others (nor for an object that
    lacks a field this version of the API always sends, or has one of another type or size: the event is kept,
    and the poll reconciles)."""
    try:
        return _read_object(event)
    except (AttributeError, KeyError, TypeError, ValueError, ArithmeticError, OSError):
        return {}


def _text(value: object, limit: int = 255, *, blank: bool = False) -> str:
    """A string field of Stripe's object, as the service stores it; ``TypeError`` for anything else."""
    if value is None and blank:
        return ""
    if not isinstance(value, str) or len(value) > limit or not (value or blank):
        raise TypeError("not a string field of Stripe's")
    return value


def _minor_amount(value: object) -> Decimal:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_MINOR_AMOUNT:
        raise TypeError("not an amount of Stripe's")
    return _major_units(value)


def _read_object(event: stripe.Event) -> dict[str, Any]:
    obj = event.data.object
    if event.type in PAYOUT_EVENTS and isinstance(obj, stripe.Payout):
        state = payout_state(obj)
        _text(state.payout_id, 100)
        _text(state.failure_reason, 10_000, blank=True)
        return {"payout": state}
    if event.type in REFUND_EVENTS and isinstance(obj, stripe.Charge):
        return {"charge_id": _text(_id(obj.payment_intent), 100, blank=True)}
    if event.type in DISPUTE_EVENTS and isinstance(obj, stripe.Dispute):
        intent = _text(_id(obj.payment_intent), 100, blank=True)
        due_by = obj.evidence_details.due_by if obj.evidence_details else None
        return {
            "charge_id": intent,
            "dispute": DisputeInfo(
                dispute_id=_text(obj.id, 100),
                charge_id=intent,
                amount=_minor_amount(obj.amount),
                currency=_text(obj.currency, 3).upper(),
                reason=_text(obj.reason, blank=True),
                status=_text(obj.status, 64),
                evidence_due_by=_at(due_by),
            ),
        }
    return {}
