"""The confirmation's charge of a test-mode order (docs/partners/test-mode.md "Test mode").

A test order is never charged on a real card: whatever ``PAYMENT_PLATFORM`` says, it is charged on the
sandbox platform, on one of the sandbox test cards every partner has in test mode (they need no set-up, so
payment readiness is always met in test mode). No ``Charge`` row is written: test orders stay out of every
money figure, refund sweep and payment alert. A ``seller_email`` ending ``@decline.test`` makes the charge
decline, so partners can exercise the ``card_declined`` path.
"""

from __future__ import annotations

from .. import platform as pf
from ..errors import PaymentError
from ..platform import get_platform

DECLINE_DOMAIN = "@decline.test"


def charge_declines(*, seller_email: str) -> bool:
    return seller_email.strip().lower().endswith(DECLINE_DOMAIN)


def test_orders_charge(*, orders: list) -> dict[int, pf.ChargeResult | PaymentError]:
    """Charge test orders on the sandbox: one read of their test cards and one batch on the sandbox, idempotent
    per order (the sandbox's idempotency key). Each order's answer by its pk: the charge's result, or the
    platform's error for that order alone."""
    if not orders:
        return {}
    sandbox = get_platform("sandbox")
    wanted = [
        (f"test:{order.partner.public_id}", charge_declines(seller_email=order.seller_email))
        for order in orders
    ]
    tokens = sandbox.test_mode_cards(wanted=wanted)
    answers = sandbox.charge_cards(
        [
            pf.ChargeRequest(
                card_token=tokens[pair],
                amount=order.total_price,
                currency="USD",
                idempotency_key=f"test:{order.order_id}",
                description=f"Test-mode order {order.order_id}",
            )
            for order, pair in zip(orders, wanted, strict=True)
        ]
    )
    return {order.pk: answer for order, answer in zip(orders, answers, strict=True)}
