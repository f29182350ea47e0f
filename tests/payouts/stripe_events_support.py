"""What the tests of ``POST /payments/stripe/events`` share: a delivery signed as Stripe signs it, a Stripe
partner, an order whose payout Stripe holds, an order whose card Stripe charged (the fixtures are found through
tests/payouts/conftest.py)."""

import json

import pytest
from django.core import mail
from django.test import Client

from payouts.backoffice.dashboard import staff_dashboard
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge, CreditCard, PayoutAccount
from payouts.services.progression import payouts_progress
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.payouts import stripe_recording as s

URL = "/payments/stripe/events"
ACCOUNT = "acct_1Harbour"


def deliver(body: bytes | dict, *, signature: str | None = None, client: Client | None = None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {} if signature == "" else {"HTTP_STRIPE_SIGNATURE": signature or s.sign(raw)}
    return (client or Client()).post(URL, raw, content_type="application/json", **headers)


def queue(label: str) -> int:
    return next(q.count for q in staff_dashboard().queues if q.label == label)


def alerts(subject_start: str) -> list:
    return [m for m in mail.outbox if m.subject.startswith(subject_start)]


@pytest.fixture
def stripe_partner(recording_stripe):
    """A partner whose payout account and card are Stripe's."""
    creds = make_partner(name="Harbour Tickets", email="ops@harbour.example")
    PayoutAccount.objects.filter(partner=creds.partner).update(platform="stripe", platform_account_id=ACCOUNT)
    CreditCard.objects.filter(partner=creds.partner).update(
        platform="stripe", platform_card_token="cus_1:pm_1"
    )
    return creds.partner


@pytest.fixture
def payout_in_flight(stripe_partner, recording_stripe):
    """An order whose payout Stripe has (``po_1``, pending), the order ``payout_in_process``."""
    # Where the order's confirmation runs on commit (transaction=True), its charge is Stripe's too.
    recording_stripe.answer("POST", "/v1/payment_intents", (200, s.payment_intent("pi_1")))
    order = make_order(stripe_partner, status="ticket_received")
    amount = int(order.total_price * 100)
    recording_stripe.answer(
        "POST", "/v1/transfers", (200, s.transfer("tr_1", amount=amount, destination=ACCOUNT))
    )
    recording_stripe.answer("POST", "/v1/payouts", (200, s.payout("po_1", status="pending", amount=amount)))
    payouts_progress()
    order.refresh_from_db()
    assert order.status == "payout_in_process"
    recording_stripe.requests.clear()
    return order


@pytest.fixture
def charged_order(stripe_partner, recording_stripe):
    """An order whose card charge is Stripe's PaymentIntent ``pi_9``."""
    # Answered first: where the order's confirmation runs on commit (transaction=True), it charges at once.
    recording_stripe.answer("POST", "/v1/payment_intents", (200, s.payment_intent("pi_9")))
    order = make_order(stripe_partner)
    order_confirm(order_pk=order.pk)
    assert Charge.objects.get(order=order).platform_charge_id == "pi_9"
    recording_stripe.requests.clear()
    return order


def payout_event(kind: str, status: str, *, event_id: str = "evt_payout", **fields) -> dict:
    return s.event(kind, s.payout("po_1", status=status, **fields), event_id=event_id, account=ACCOUNT)
