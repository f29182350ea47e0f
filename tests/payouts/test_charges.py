"""One order's charge (a batch of one): one charge per order, declines with a reason, retries on a platform outage."""

import threading
from decimal import Decimal

import pytest
from django.db import connection

from payouts.errors import PlatformUnavailable
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge
from payouts.sandbox.models import SandboxCharge
from payouts.services.methods import payment_methods_create_sandbox
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.payouts.charging import charge_order


@pytest.mark.django_db
def test_an_order_is_charged_its_total_price_once(partner):
    order = make_order(partner, quantity=3, offer_price=Decimal("40.10"))
    charge = charge_order(order=order)
    assert charge.status == "succeeded"
    assert charge.amount == Decimal("120.30")
    assert charge.currency == "USD"
    assert charge.idempotency_key == order.order_id
    assert charge.platform_charge_id.startswith("sbx_ch_")
    assert (charge.card_brand, charge.card_last4) == ("Visa", "4242")
    again = charge_order(order=order)
    assert again.pk == charge.pk
    assert Charge.objects.count() == 1
    assert SandboxCharge.objects.get().amount == Decimal("120.30")


@pytest.mark.django_db
def test_declined_card_gives_failed_charge_with_reason(db):
    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, card_number="4000000000000002")
    order = make_order(creds.partner)
    charge = charge_order(order=order)
    assert charge.status == "failed"
    assert charge.failure_reason == "Your card was declined."
    assert charge_order(order=order).status == "failed"
    assert SandboxCharge.objects.count() == 1


@pytest.mark.django_db
def test_declined_card_cancels_the_order_with_the_reason(db):
    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, card_number="4000000000009995")
    order = make_order(creds.partner)
    order_confirm(order_pk=order.pk)
    order.refresh_from_db()
    assert order.status == "canceled"
    last = order.status_history.order_by("-at", "-pk").first()
    assert "insufficient funds" in last.reason


@pytest.mark.django_db
def test_platform_outage_raises_and_a_retry_charges_once(partner, monkeypatch):
    from payouts.platform.sandbox.backend import SandboxPlatform

    order = make_order(partner)
    real = SandboxPlatform.charge_cards
    calls = {"n": 0}

    def flaky(self, requests):
        calls["n"] += 1
        if calls["n"] == 1:
            return [PlatformUnavailable("timeout") for _ in requests]
        return real(self, requests)

    monkeypatch.setattr(SandboxPlatform, "charge_cards", flaky)
    with pytest.raises(PlatformUnavailable):
        charge_order(order=order)
    pending = Charge.objects.get(order=order)
    assert pending.status == "pending"
    assert pending.last_error == "timeout"
    charge = charge_order(order=order)
    assert charge.status == "succeeded"
    assert charge.attempts == 2
    assert SandboxCharge.objects.count() == 1


@pytest.mark.django_db
def test_processing_error_test_card_makes_confirmation_retry(db):
    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, card_number="4000000000000119")
    order = make_order(creds.partner)
    with pytest.raises(PlatformUnavailable):
        charge_order(order=order)
    order.refresh_from_db()
    assert order.status == "accepted"


@pytest.mark.django_db
def test_no_card_on_file_fails_the_charge(db):
    creds = make_partner(payment_methods=False)
    order = make_order(creds.partner)
    charge = charge_order(order=order)
    assert charge.status == "failed"
    assert charge.failure_reason == "No credit card on file."


@pytest.mark.django_db(transaction=True)
def test_concurrent_charges_for_one_order_charge_once(db):
    creds = make_partner()
    order = make_order(creds.partner)
    Charge.objects.filter(order=order).delete()  # the confirmation already charged it on commit
    SandboxCharge.objects.all().delete()
    barrier = threading.Barrier(4)
    results, errors = [], []

    def worker():
        try:
            barrier.wait()
            results.append(charge_order(order=order).pk)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(results)) == 1
    assert Charge.objects.filter(order=order).count() == 1
    assert SandboxCharge.objects.count() == 1
