"""Refunds: a canceled order's succeeded charge goes back to the card once; an expired order keeps its charge.

The sandbox platform is stateful: its charges record what was refunded and its refunds are idempotent per key.
An outage is the sandbox card's processor going down (the platform's own state, as its ``…0119`` test card).
"""

import logging
from decimal import Decimal

import pytest

from orders.models import Order
from orders.services import order_confirm
from payouts.errors import PlatformError, PlatformUnavailable
from payouts.models import Charge, CreditCard, SandboxCard, SandboxCharge, SandboxRefund
from payouts.platform import get_platform
from payouts.platform.stripe import StripePlatform
from payouts.services import payment_methods_create_sandbox
from tests.conftest import make_partner
from tests.payouts.test_stripe_platform import FakeStripe

from .factories import make_order

REFUND_FAILS_CARD = "4000000000005126"
DECLINED_CARD = "4000000000000002"


# --- helpers ------------------------------------------------------------------------------------------------
def charged_order(partner, **kwargs) -> Order:
    """An order confirmed the way the confirmation task does it: card charged, ``awaiting_transfer``."""
    order = make_order(partner, **kwargs)
    if order.status == "accepted":  # with transaction=True tests the confirmation already ran on commit
        order_confirm(order_pk=order.pk)
        order.refresh_from_db()
    assert order.status == "awaiting_transfer"
    assert Charge.objects.get(order=order).status == "succeeded"
    return order


def refunds_of(order: Order) -> list[SandboxRefund]:
    """What the sandbox platform holds for this order's charge."""
    return list(SandboxRefund.objects.filter(idempotency_key__startswith=order.order_id).order_by("pk"))


def set_card_behavior(partner, behavior: str) -> None:
    """The platform's side of the partner's card changes (its processor goes down, comes back, …)."""
    token = CreditCard.objects.get(partner=partner).platform_card_token
    assert SandboxCard.objects.filter(token=token).update(behavior=behavior) == 1


def partner_with_card(card_number: str):
    creds = make_partner(name=f"Card {card_number[-4:]} Co", payment_methods=False, email="ops@card.example")
    payment_methods_create_sandbox(partner=creds.partner, card_number=card_number)
    return creds


# --- the sandbox platform ---------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_sandbox_refund_is_recorded_on_the_charge_and_idempotent_per_key(partner, caplog):
    order = charged_order(partner, quantity=3, offer_price=Decimal("40.10"))
    charge = Charge.objects.get(order=order)
    platform = get_platform("sandbox")
    caplog.set_level(logging.INFO, logger="payouts.platform")

    first = platform.refund_charge(
        charge_id=charge.platform_charge_id,
        amount=Decimal("120.30"),
        currency="USD",
        idempotency_key="k-1",
        reason="test",
    )
    again = platform.refund_charge(
        charge_id=charge.platform_charge_id,
        amount=Decimal("120.30"),
        currency="USD",
        idempotency_key="k-1",
        reason="test",
    )

    assert (first.status, first.refund_id) == ("succeeded", again.refund_id)
    assert first.refund_id.startswith("sbx_re_")
    assert SandboxRefund.objects.count() == 1
    sandbox_charge = SandboxCharge.objects.get(charge_id=charge.platform_charge_id)
    assert sandbox_charge.amount_refunded == Decimal("120.30")
    assert sandbox_charge.refunded_at is not None
    assert platform.get_refund(refund_id=first.refund_id).status == "succeeded"
    assert "payment platform call refund_charge ok idempotency_key=k-1" in caplog.text
    with pytest.raises(PlatformError, match="other parameters"):
        platform.refund_charge(
            charge_id=charge.platform_charge_id,
            amount=Decimal("1.00"),
            currency="USD",
            idempotency_key="k-1",
            reason="",
        )
    with pytest.raises(PlatformError, match="more than what is left"):
        platform.refund_charge(
            charge_id=charge.platform_charge_id,
            amount=Decimal("0.01"),
            currency="USD",
            idempotency_key="k-2",
            reason="",
        )
    with pytest.raises(PlatformError, match="unknown"):
        platform.get_refund(refund_id="sbx_re_nope")


@pytest.mark.django_db
def test_sandbox_partial_refunds_never_add_up_to_more_than_the_charge(partner):
    order = charged_order(partner, quantity=2, offer_price=Decimal("50.00"))
    charge_id = Charge.objects.get(order=order).platform_charge_id
    platform = get_platform("sandbox")
    for key, amount in (("a", "60.00"), ("b", "40.00")):
        assert (
            platform.refund_charge(
                charge_id=charge_id, amount=Decimal(amount), currency="USD", idempotency_key=key, reason=""
            ).status
            == "succeeded"
        )
    with pytest.raises(PlatformError):
        platform.refund_charge(
            charge_id=charge_id, amount=Decimal("0.01"), currency="USD", idempotency_key="c", reason=""
        )
    with pytest.raises(PlatformError, match="unknown"):
        platform.refund_charge(
            charge_id="sbx_ch_unknown", amount=Decimal("1"), currency="USD", idempotency_key="d", reason=""
        )
    assert SandboxCharge.objects.get(charge_id=charge_id).amount_refunded == Decimal("100.00")


@pytest.mark.django_db
def test_sandbox_refuses_to_refund_a_declined_charge(db):
    creds = partner_with_card(DECLINED_CARD)
    order = make_order(creds.partner)
    order_confirm(order_pk=order.pk)
    charge = Charge.objects.get(order=order)
    assert charge.status == "failed"
    with pytest.raises(PlatformError, match="Only a succeeded charge"):
        get_platform("sandbox").refund_charge(
            charge_id=charge.platform_charge_id,
            amount=charge.amount,
            currency="USD",
            idempotency_key="x",
            reason="",
        )


@pytest.mark.django_db
def test_sandbox_processor_outage_makes_refunds_transient_then_they_refund_once(partner):
    order = charged_order(partner)
    charge = Charge.objects.get(order=order)
    platform = get_platform("sandbox")
    refund = {
        "charge_id": charge.platform_charge_id,
        "amount": charge.amount,
        "currency": "USD",
        "idempotency_key": "k",
        "reason": "",
    }
    set_card_behavior(partner, SandboxCard.Behavior.PROCESSING_ERROR)
    with pytest.raises(PlatformUnavailable, match="0119"):
        platform.refund_charge(**refund)
    assert SandboxRefund.objects.count() == 0
    set_card_behavior(partner, SandboxCard.Behavior.SUCCEED)
    assert platform.refund_charge(**refund).status == "succeeded"
    # Once refunded, the same key answers from the record, whatever the processor does.
    set_card_behavior(partner, SandboxCard.Behavior.PROCESSING_ERROR)
    assert platform.refund_charge(**refund).status == "succeeded"
    assert SandboxRefund.objects.count() == 1


@pytest.mark.django_db
def test_sandbox_refund_failing_test_card_gives_a_failed_refund_with_a_reason(db):
    creds = partner_with_card(REFUND_FAILS_CARD)
    order = charged_order(creds.partner)
    charge = Charge.objects.get(order=order)
    refund = {
        "charge_id": charge.platform_charge_id,
        "amount": charge.amount,
        "currency": "USD",
        "idempotency_key": "k",
        "reason": "",
    }
    result = get_platform("sandbox").refund_charge(**refund)
    assert result.status == "failed"
    assert "card account is closed" in result.failure_reason
    assert get_platform("sandbox").refund_charge(**refund) == result
    assert SandboxRefund.objects.count() == 1
    assert SandboxCharge.objects.get(charge_id=charge.platform_charge_id).amount_refunded == 0


# --- the Stripe backend, against a local fake Stripe (no patching) ---------------------------------------------------
@pytest.fixture
def fake_stripe():
    fake = FakeStripe()
    yield fake
    fake.stop()


@pytest.fixture
def stripe(fake_stripe):
    return StripePlatform(
        secret_key="sk_test_abc",
        connect_client_id="ca_123",
        api_base=fake_stripe.url,
        connect_base=fake_stripe.url,
        timeout=2,
    )


def test_stripe_refund_is_a_refund_of_the_payment_intent_with_the_idempotency_key(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/refunds")] = (200, {"id": "re_1", "status": "succeeded"})
    result = stripe.refund_charge(
        charge_id="pi_1",
        amount=Decimal("120.30"),
        currency="USD",
        idempotency_key="ord_1:refund",
        reason="Order ord_1 canceled",
    )
    assert (result.refund_id, result.status, result.failure_reason) == ("re_1", "succeeded", "")
    [request] = fake_stripe.requests
    assert (request["method"], request["path"]) == ("POST", "/v1/refunds")
    assert request["headers"]["idempotency-key"] == "ord_1:refund"
    assert request["headers"]["authorization"] == "Bearer sk_test_abc"
    assert request["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert request["headers"]["stripe-version"] == "2024-06-20"
    assert request["form"] == [
        ("payment_intent", "pi_1"),
        ("amount", "12030"),
        ("metadata[idempotency_key]", "ord_1:refund"),
        ("metadata[reason]", "Order ord_1 canceled"),
    ]


@pytest.mark.parametrize(
    ("stripe_refund", "status", "reason"),
    [
        ({"id": "re_2", "status": "pending"}, "pending", ""),
        ({"id": "re_2", "status": "requires_action"}, "pending", ""),
        (
            {"id": "re_2", "status": "failed", "failure_reason": "expired_or_canceled_card"},
            "failed",
            "Stripe reported the refund as failed: expired or canceled card.",
        ),
        ({"id": "re_2", "status": "canceled"}, "failed", "Stripe reported the refund as canceled: canceled."),
    ],
)
def test_stripe_refund_states_map_onto_the_interface(stripe, fake_stripe, stripe_refund, status, reason):
    fake_stripe.routes[("GET", "/v1/refunds/re_2")] = (200, stripe_refund)
    result = stripe.get_refund(refund_id="re_2")
    assert (result.refund_id, result.status, result.failure_reason) == ("re_2", status, reason)
    assert fake_stripe.requests[0]["method"] == "GET"


def test_stripe_refund_errors_are_transient_or_permanent(stripe, fake_stripe):
    refund = {
        "charge_id": "pi_1",
        "amount": Decimal("5"),
        "currency": "USD",
        "idempotency_key": "k",
        "reason": "",
    }
    fake_stripe.routes[("POST", "/v1/refunds")] = (503, {"error": {"type": "api_error", "message": "down"}})
    with pytest.raises(PlatformUnavailable):
        stripe.refund_charge(**refund)
    fake_stripe.routes[("POST", "/v1/refunds")] = (
        400,
        {
            "error": {
                "type": "invalid_request_error",
                "code": "charge_already_refunded",
                "message": "Charge ch_1 has already been refunded.",
            }
        },
    )
    with pytest.raises(PlatformError, match="already been refunded"):
        stripe.refund_charge(**refund)
