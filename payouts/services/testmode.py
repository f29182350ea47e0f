"""The confirmation's charge of a test-mode order (DECISIONS "Test mode").

A test order is never charged on a real card: whatever ``PAYMENT_PLATFORM`` says, it is charged on the
sandbox platform, on one of the sandbox test cards every partner has in test mode (they need no set-up, so
payment readiness is always met in test mode). No ``Charge`` row is written: test orders stay out of every
money figure, refund sweep and payment alert. A ``seller_email`` ending ``@decline.test`` makes the charge
decline, so partners can exercise the ``card_declined`` path.
"""

from __future__ import annotations

from django.utils import timezone

from .. import platform as pf
from ..models import SandboxCard
from ..platform import get_platform

DECLINE_DOMAIN = "@decline.test"
_CARDS = {
    SandboxCard.Behavior.SUCCEED: ("Visa", "4242"),
    SandboxCard.Behavior.DECLINE: ("Visa", "0002"),
}


def charge_declines(*, seller_email: str) -> bool:
    return seller_email.strip().lower().endswith(DECLINE_DOMAIN)


def test_card_token(*, partner_public_id: str, behavior: str) -> str:
    """The partner's sandbox test card that behaves as ``behavior``, made on first use."""
    reference = f"test:{partner_public_id}"
    cards = SandboxCard.objects.filter(customer_reference=reference, behavior=behavior).order_by("pk")
    card = cards.first()
    if card is None:
        # Two first charges at once may make two such cards: both behave the same, the oldest is used.
        brand, last4 = _CARDS[behavior]
        card = SandboxCard.objects.create(
            customer_reference=reference,
            behavior=behavior,
            holder_name="Test mode",
            brand=brand,
            last4=last4,
            exp_month=12,
            exp_year=timezone.now().year + 4,
        )
    return card.token


def test_charge_for_order(*, order) -> pf.ChargeResult:
    """Charge a test order on the sandbox; idempotent per order (the sandbox's idempotency key)."""
    behavior = (
        SandboxCard.Behavior.DECLINE
        if charge_declines(seller_email=order.seller_email)
        else SandboxCard.Behavior.SUCCEED
    )
    return get_platform("sandbox").charge_card(
        card_token=test_card_token(partner_public_id=order.partner.public_id, behavior=behavior),
        amount=order.total_price,
        currency="USD",
        idempotency_key=f"test:{order.order_id}",
        description=f"Test-mode order {order.order_id}",
    )
