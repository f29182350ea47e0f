"""Refunds: a canceled order's succeeded charge goes back to the card once; an expired order keeps its charge.

The sandbox platform is stateful: its charges record what was refunded and its refunds are idempotent per key.
An outage is the sandbox card's processor going down (the platform's own state, as its ``…0119`` test card).
"""

import logging
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.utils import timezone
from kombu import pools as kombu_pools

from catalog import services as catalog_services
from config.celery import app as celery_app
from orders.models import Order
from orders.services import order_cancel, order_create, orders_expire_overdue
from payouts import tasks
from payouts.errors import PlatformError, PlatformUnavailable
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge, CreditCard, SweepMark
from payouts.platform import get_platform
from payouts.sandbox.models import SandboxCard, SandboxCharge, SandboxRefund
from payouts.services import refunds
from payouts.services.methods import payment_methods_create_sandbox
from payouts.services.refunds import (
    REFUND_SWEEP_GRACE,
    REFUND_SWEEP_MARK,
    REFUND_SWEEP_WINDOW,
    refund_request,
    refunds_sweep,
    refunds_sweep_mark,
)
from tests.confirming import post_confirmed
from tests.conftest import issue_token, make_partner
from tests.orders.factories import make_order, order_row
from tests.payouts import stripe_recording as stripe_objects
from tests.quotes.factories import QuoteFactory, quote_token

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


def api_client_for(creds):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    return client


def partner_with_card(card_number: str):
    creds = make_partner(name=f"Card {card_number[-4:]} Co", payment_methods=False, email="ops@card.example")
    payment_methods_create_sandbox(partner=creds.partner, card_number=card_number)
    return creds


def cancel_order(order: Order) -> None:
    order_cancel(order=order, actor="partner:test", reason="Canceled by the partner")


def run_task(task, *args):
    """Run a Celery task in-process, as a worker would, and return what it returned."""
    # ``.result``, not ``.get()``: another test's in-process worker can leave Celery refusing blocking joins.
    result = task.apply(args=list(args))
    assert result.successful(), result.traceback
    return result.result


def charge_pk(order: Order) -> int:
    return Charge.objects.get(order=order).pk


def _use_broker(url: str) -> None:
    """Point the Celery app at ``url`` and drop the connections pooled for the previous one."""
    kombu_pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url


@pytest.fixture
def staff(db) -> Client:
    user = get_user_model().objects.create_superuser("ops", "ops@service.example", "admin pass 5511")
    client = Client()
    client.force_login(user)
    return client


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


# --- the life cycle: cancel refunds, expiry and declines do not ---------------------------------------------------
@pytest.mark.django_db
def test_partner_cancel_of_a_charged_order_refunds_it_once(
    auth_client, partner, django_capture_on_commit_callbacks
):
    order = charged_order(partner, quantity=2, offer_price=Decimal("85.00"))
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(f"/v1/orders/{order.order_id}/cancel")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["status"] == "canceled"

    charge = Charge.objects.get(order=order)
    assert charge.refund_status == "succeeded"
    assert charge.refunded_at is not None and charge.refund_requested_at is not None
    assert charge.platform_refund_id.startswith("sbx_re_")
    [refund] = refunds_of(order)
    assert (refund.idempotency_key, refund.amount, refund.status) == (
        f"{order.order_id}:refund",
        Decimal("170.00"),
        "succeeded",
    )
    assert refund.refund_id == charge.platform_refund_id
    assert SandboxCharge.objects.get(charge_id=charge.platform_charge_id).amount_refunded == Decimal("170.00")

    # A second delivery of the task, and the beat's sweep, change nothing.
    assert run_task(tasks.refund_for_order, order.pk) == "succeeded"
    assert run_task(tasks.refund_for_order, order.pk) == "succeeded"
    assert run_task(tasks.payouts_progress)["refunds"] == {"refunded": 0, "failed": 0, "pending": 0}
    assert len(refunds_of(order)) == 1
    # The API's order shape is unchanged by refunds.
    detail = auth_client.get(f"/v1/orders/{order.order_id}").json()["data"]
    assert detail["status"] == "canceled"
    assert not [key for key in detail if "refund" in key]


@pytest.mark.django_db(transaction=True)
def test_concurrent_refund_runs_for_one_order_refund_once_at_the_platform(db, caplog):
    """The cancel's message was lost (broker down); then four workers — task deliveries and sweeps — race."""
    assert celery_app.conf.broker_url.startswith("redis://"), "this test needs REDIS_URL (a real broker)"
    creds = make_partner()
    order = charged_order(creds.partner)
    previous_broker = celery_app.conf.broker_url
    try:
        _use_broker("redis://127.0.0.1:1/0")
        celery_app.conf.task_always_eager = False
        cancel_order(order)
    finally:
        _use_broker(previous_broker)
        celery_app.conf.task_always_eager = True
    charge = Charge.objects.get(order=order)
    # The notification of the cancel never reached its subscriber: the refund was not even requested.
    assert (charge.refund_status, charge.refund_attempted_at) == ("none", None)
    assert refunds_of(order) == []

    caplog.set_level(logging.INFO, logger="payouts.platform")
    barrier = threading.Barrier(4)
    outcomes, errors = [], []

    def worker(index: int) -> None:
        try:
            barrier.wait()
            if index % 2:
                outcomes.append(run_task(tasks.refund_for_order, order.pk))
            else:
                refunds_sweep()
                outcomes.append(Charge.objects.get(order=order).refund_status)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    # Past the sweep's grace period, so the sweeps compete with the task deliveries.
    with time_machine.travel(timezone.now() + timedelta(minutes=3)):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    assert outcomes == ["succeeded"] * 4
    # The charge row's lock: one run talked to the platform, the others saw its outcome.
    assert [r.operation for r in caplog.records if getattr(r, "operation", "").startswith("refund")] == [
        "refund_charge"
    ]
    assert len(refunds_of(order)) == 1
    charge.refresh_from_db()
    assert SandboxCharge.objects.get(charge_id=charge.platform_charge_id).amount_refunded == charge.amount


@pytest.mark.django_db
def test_cancel_of_an_accepted_order_refunds_nothing(
    auth_client, partner, django_capture_on_commit_callbacks
):
    order = make_order(partner)  # the confirmation has not run: never charged
    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.post(f"/v1/orders/{order.order_id}/cancel").status_code == 200
    order.refresh_from_db()
    assert order.status == "canceled"
    assert not Charge.objects.filter(order=order).exists()
    assert run_task(tasks.refund_for_order, order.pk) is None
    order_confirm(order_pk=order.pk)  # a late confirmation does not charge a canceled order either
    assert not Charge.objects.filter(order=order).exists()
    assert SandboxRefund.objects.count() == 0


@pytest.mark.django_db
def test_expired_order_keeps_its_charge(partner):
    order = charged_order(partner)
    with time_machine.travel(timezone.now() + timedelta(days=25)):
        assert orders_expire_overdue() == [order.order_id]
        run_task(tasks.payouts_progress)
        assert run_task(tasks.refund_for_order, order.pk) == "none"
    order.refresh_from_db()
    assert order.status == "expired"
    charge = Charge.objects.get(order=order)
    assert (charge.status, charge.refund_status, charge.refunded_at) == ("succeeded", "none", None)
    assert SandboxRefund.objects.count() == 0


@pytest.mark.django_db
def test_declined_charge_is_not_refunded(db, django_capture_on_commit_callbacks):
    creds = partner_with_card(DECLINED_CARD)
    order = make_order(creds.partner)
    with django_capture_on_commit_callbacks(execute=True):
        order_confirm(order_pk=order.pk)
    order.refresh_from_db()
    assert order.status == "canceled"
    charge = Charge.objects.get(order=order)
    assert (charge.status, charge.refund_status) == ("failed", "none")
    assert refunds_sweep().refunded == 0
    assert run_task(tasks.refund_for_order, order.pk) == "none"
    assert SandboxRefund.objects.count() == 0


@pytest.mark.django_db
def test_platform_outage_is_retried_with_backoff_and_refunded_once_later(
    auth_client, partner, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    order = charged_order(partner)
    set_card_behavior(partner, SandboxCard.Behavior.PROCESSING_ERROR)  # the card processor goes down
    countdowns = []
    real_retry = tasks.refund_for_order.retry

    def recording_retry(*args, **kwargs):
        countdowns.append(kwargs.get("countdown"))
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(tasks.refund_for_order, "retry", recording_retry)
    caplog.set_level(logging.INFO, logger="payouts.platform")

    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.post(f"/v1/orders/{order.order_id}/cancel").status_code == 200

    # Every delivery asked the platform with the same key, backing off longer each time, then gave up.
    calls = [r for r in caplog.records if getattr(r, "operation", "") == "refund_charge"]
    assert len(calls) == tasks.refund_for_order.max_retries + 1
    assert {r.outcome for r in calls} == {"unavailable"}
    assert {r.platform_idempotency_key for r in calls} == {f"{order.order_id}:refund"}
    assert len(countdowns) == tasks.refund_for_order.max_retries + 1
    assert countdowns[0] >= 10 and countdowns[1] >= 20 and countdowns[2] >= 40
    charge = Charge.objects.get(order=order)
    assert charge.refund_status == "pending"
    assert "did not answer" in charge.refund_last_error
    assert refunds_of(order) == []

    set_card_behavior(partner, SandboxCard.Behavior.SUCCEED)  # the processor is back
    assert refunds_sweep().pending == 0  # tried moments ago: the sweep leaves it to the task for now
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        summary = run_task(tasks.payouts_progress)["refunds"]
        assert summary == {"refunded": 1, "failed": 0, "pending": 0}
        assert refunds_sweep().refunded == 0
    charge.refresh_from_db()
    assert (charge.refund_status, charge.refund_last_error) == ("succeeded", "")
    [refund] = refunds_of(order)
    assert refund.idempotency_key == f"{order.order_id}:refund"


@pytest.mark.django_db
def test_a_lost_refund_message_is_refunded_by_the_sweep_after_a_grace_period(
    partner, django_capture_on_commit_callbacks
):
    order = charged_order(partner)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:  # published never
        cancel_order(order)
    assert callbacks
    # The cancel's notification never reached the refund subscriber: nothing requested yet.
    assert Charge.objects.get(order=order).refund_status == "none"
    assert refunds_sweep().refunded == 0  # its message may still be on the way
    with time_machine.travel(timezone.now() + timedelta(minutes=3)):
        assert refunds_sweep().refunded == 1
    assert Charge.objects.get(order=order).refund_status == "succeeded"
    assert len(refunds_of(order)) == 1


@pytest.mark.django_db
def test_a_refund_owed_on_an_older_cancel_is_left_to_the_hourly_sweep_which_finds_it(
    partner, django_capture_on_commit_callbacks
):
    """The payout run's sweep reads a day of cancels; a refund owed on an older cancel (the workers down for
    longer) is found by the hourly task, which reads every canceled order, and refunded once."""
    order = charged_order(partner)
    with django_capture_on_commit_callbacks(execute=False):  # the refund's request never ran
        cancel_order(order)
    with time_machine.travel(timezone.now() + REFUND_SWEEP_WINDOW + timedelta(hours=1)):
        assert run_task(tasks.payouts_progress)["refunds"]["refunded"] == 0  # past the minute's window
        assert Charge.objects.get(order=order).refund_status == "none"
        assert run_task(tasks.refunds_sweep)["refunded"] == 1
        assert run_task(tasks.refunds_sweep)["refunded"] == 0
    assert Charge.objects.get(order=order).refund_status == "succeeded"
    assert len(refunds_of(order)) == 1


@pytest.mark.django_db
def test_the_hourly_sweep_reads_the_cancels_since_its_mark(partner, django_capture_on_commit_callbacks):
    """Its first run reads every cancel and leaves its mark at the grace's edge; a later run reads only the cancels
    since the mark, whatever the history behind it. Without a mark it reads them all again."""
    first, passed = charged_order(partner), charged_order(partner)
    with django_capture_on_commit_callbacks(execute=False):  # the refunds' requests never ran
        cancel_order(first)
    later = timezone.now() + REFUND_SWEEP_WINDOW + timedelta(hours=1)
    with time_machine.travel(later, tick=False):
        assert refunds_sweep_mark() is None
        assert run_task(tasks.refunds_sweep)["refunded"] == 1
        assert refunds_sweep_mark() == later - REFUND_SWEEP_GRACE
    assert Charge.objects.get(order=first).refund_status == "succeeded"

    # A cancel dated before the mark and still owing (what the mark promises cannot happen) is not read again.
    with django_capture_on_commit_callbacks(execute=False):
        cancel_order(passed)
    Order.objects.filter(pk=passed.pk).update(status_changed_at=later - timedelta(hours=2))
    with time_machine.travel(later + timedelta(hours=1), tick=False):
        assert run_task(tasks.refunds_sweep)["refunded"] == 0
        assert Charge.objects.get(order=passed).refund_status == "none"
        assert refunds_sweep_mark() == later + timedelta(hours=1) - REFUND_SWEEP_GRACE
        SweepMark.objects.filter(name=REFUND_SWEEP_MARK).delete()
        assert run_task(tasks.refunds_sweep)["refunded"] == 1
    assert Charge.objects.get(order=passed).refund_status == "succeeded"
    assert [len(refunds_of(first)), len(refunds_of(passed))] == [1, 1]


@pytest.mark.django_db
def test_the_hourly_mark_stays_at_the_oldest_cancel_it_could_not_finish(
    partner, django_capture_on_commit_callbacks, monkeypatch
):
    stuck, fine = charged_order(partner), charged_order(partner)
    start = timezone.now()
    with django_capture_on_commit_callbacks(execute=False):
        cancel_order(stuck)
    with (
        time_machine.travel(start + timedelta(minutes=5), tick=False),
        django_capture_on_commit_callbacks(execute=False),
    ):
        cancel_order(fine)
    stuck_at = Order.objects.get(pk=stuck.pk).status_changed_at
    real_refund = refunds.refund_for_order

    def failing_for_stuck(*, order):
        if order.pk == stuck.pk:
            raise RuntimeError("an unexpected failure")
        return real_refund(order=order)

    monkeypatch.setattr(refunds, "refund_for_order", failing_for_stuck)
    later = start + REFUND_SWEEP_WINDOW + timedelta(hours=1)
    with time_machine.travel(later, tick=False):
        assert run_task(tasks.refunds_sweep)["refunded"] == 1  # the other one
        assert refunds_sweep_mark() == stuck_at
    monkeypatch.setattr(refunds, "refund_for_order", real_refund)
    with time_machine.travel(later + timedelta(hours=1), tick=False):
        assert run_task(tasks.refunds_sweep)["refunded"] == 1
        assert refunds_sweep_mark() == later + timedelta(hours=1) - REFUND_SWEEP_GRACE
    assert Charge.objects.get(order=stuck).refund_status == "succeeded"
    assert [len(refunds_of(stuck)), len(refunds_of(fine))] == [1, 1]


@pytest.mark.django_db
def test_the_payout_run_refunds_a_lost_request_within_its_window(partner, django_capture_on_commit_callbacks):
    order = charged_order(partner)
    with django_capture_on_commit_callbacks(execute=False):
        cancel_order(order)
    with time_machine.travel(timezone.now() + REFUND_SWEEP_WINDOW - timedelta(minutes=1)):
        assert run_task(tasks.payouts_progress)["refunds"]["refunded"] == 1
    assert len(refunds_of(order)) == 1


@pytest.mark.django_db
def test_the_sweep_refunds_orders_canceled_before_refunds_were_requested(partner):
    order = charged_order(partner)
    cancel_order(order)
    # As for an order canceled before this release: canceled, charged, no refund recorded.
    Charge.objects.filter(order=order).update(refund_status="none", refund_requested_at=None)
    with time_machine.travel(timezone.now() + timedelta(minutes=3)):  # past the sweep's grace
        summary = refunds_sweep()
    assert summary.refunded == 1
    charge = Charge.objects.get(order=order)
    assert charge.refund_status == "succeeded" and charge.refund_requested_at is not None
    assert len(refunds_of(order)) == 1


@pytest.mark.django_db
def test_event_cancellation_refunds_its_charged_orders(partner, django_capture_on_commit_callbacks):
    charged = charged_order(partner)
    row = order_row(section__event=charged.event, available_quantity=10)
    accepted = order_create(
        partner_pk=partner.pk,
        actor="partner:test",
        quote_id=quote_token(QuoteFactory(partner=partner, row=row, quantity=1)),
        delivery_type="mobile_transfer",
        is_ready_to_deliver=True,
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert catalog_services.event_cancel(event=charged.event)
    for order in (charged, accepted):
        order.refresh_from_db()
        assert order.status == "canceled"
    assert Charge.objects.get(order=charged).refund_status == "succeeded"
    assert not Charge.objects.filter(order=accepted).exists()
    assert [r.idempotency_key for r in SandboxRefund.objects.all()] == [f"{charged.order_id}:refund"]


@pytest.mark.django_db
def test_staff_cancel_in_the_admin_refunds_the_charge(staff, partner, django_capture_on_commit_callbacks):
    order = charged_order(partner)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_confirmed(
            staff,
            "/admin/orders/order/",
            {
                "action": "cancel_orders",
                "_selected_action": [order.pk],
                "confirmed": "yes",
                "reason": "Fraud",
            },
            follow=True,
        )
    assert response.status_code == 200
    assert Order.objects.get(pk=order.pk).status == "canceled"
    assert Charge.objects.get(order=order).refund_status == "succeeded"
    assert len(refunds_of(order)) == 1


# --- staff: failed refunds are visible and retried ----------------------------------------------------------------
@pytest.mark.django_db
def test_failed_refund_is_listed_and_staff_retry_refunds_it_once(staff, django_capture_on_commit_callbacks):
    creds = partner_with_card(REFUND_FAILS_CARD)
    client = api_client_for(creds)
    order, other = charged_order(creds.partner), charged_order(creds.partner)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/v1/orders/{order.order_id}/cancel").status_code == 200
    charge = Charge.objects.get(order=order)
    assert charge.refund_status == "failed"
    assert "card account is closed" in charge.refund_failure_reason

    body = staff.get("/admin/payouts/charge/", {"refund_status__exact": "failed"}).content.decode()
    assert order.order_id in body and other.order_id not in body
    assert "Refund failed" in body and "card account is closed" in body
    assert staff.get(f"/admin/payouts/charge/{charge.pk}/change/").status_code == 200
    not_refunded = staff.get("/admin/payouts/charge/", {"refund_status__exact": "none"}).content.decode()
    assert other.order_id in not_refunded and order.order_id not in not_refunded

    set_card_behavior(creds.partner, SandboxCard.Behavior.SUCCEED)  # the issuer can take refunds again
    selection = {"action": "retry_refund_action", "_selected_action": [charge.pk, charge_pk(other)]}
    with django_capture_on_commit_callbacks(execute=True):
        confirm = staff.post("/admin/payouts/charge/", selection)
    assert 'data-testid="confirm-retry"' in confirm.content.decode()  # a confirmation first, nothing retried
    assert Charge.objects.get(pk=charge.pk).refund_attempt == charge.refund_attempt
    with django_capture_on_commit_callbacks(execute=True):
        response = post_confirmed(
            staff,
            "/admin/payouts/charge/",
            {**selection, "confirmed": "yes", "reason": "Issuer reopened the card"},
            follow=True,
        )
    page = response.content.decode()
    assert "1 refund(s) will be retried now." in page
    assert "1 selected charge(s) had no failed refund" in page
    charge.refresh_from_db()
    assert (charge.refund_status, charge.refund_attempt, charge.refund_failure_reason) == ("succeeded", 2, "")
    assert [(r.idempotency_key, r.status) for r in refunds_of(order)] == [
        (f"{order.order_id}:refund", "failed"),
        (f"{order.order_id}:refund:2", "succeeded"),
    ]
    assert SandboxCharge.objects.get(charge_id=charge.platform_charge_id).amount_refunded == charge.amount
    assert refunds_of(other) == []  # awaiting transfer: nothing owed
    platform_side = staff.get("/admin/sandbox/sandboxrefund/").content.decode()
    assert f"{order.order_id}:refund:2" in platform_side

    with django_capture_on_commit_callbacks(execute=True):
        again = post_confirmed(
            staff,
            "/admin/payouts/charge/",
            {
                "action": "retry_refund_action",
                "_selected_action": [charge.pk],
                "confirmed": "yes",
                "reason": "x",
            },
            follow=True,
        )
    assert "0 refund(s) will be retried now." in again.content.decode()
    assert len(refunds_of(order)) == 2


@pytest.mark.django_db
def test_retry_refund_action_needs_the_change_permission(staff, partner):
    order = charged_order(partner)
    user = get_user_model().objects.create_user(
        "viewer", "v@service.example", "viewer pass 5511", is_staff=True
    )
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="payouts", codename="view_charge")
    )
    viewer = Client()
    viewer.force_login(user)
    response = viewer.get("/admin/payouts/charge/")
    assert response.status_code == 200 and order.order_id in response.content.decode()
    assert "retry_refund_action" not in response.content.decode()
    assert "retry_refund_action" in staff.get("/admin/payouts/charge/").content.decode()


# --- the partner portal ---------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_portal_order_page_shows_the_refund_state(django_capture_on_commit_callbacks):
    from partners.portal_services import portal_user_invite

    creds = make_partner(name="Portal Co", email="ops@portal.example")
    user = portal_user_invite(
        partner=creds.partner, email="pat@portal.example", password="long enough pass 1"
    )
    portal = Client()
    portal.force_login(user.user)

    refunded = charged_order(creds.partner, quantity=2, offer_price=Decimal("60.00"))
    with django_capture_on_commit_callbacks(execute=True):
        cancel_order(refunded)
    body = portal.get(f"/portal/orders/{refunded.order_id}").content.decode()
    assert 'data-testid="order-refund"' in body
    assert "Refunded" in body and "$120.00 to Visa ••••4242" in body
    assert "None: the order is canceled" in body  # no payout either

    pending = charged_order(creds.partner)
    with django_capture_on_commit_callbacks(execute=False):
        cancel_order(pending)
    refund_request(order_pk=pending.pk)  # the subscriber's request ran; its refund task is not done yet
    assert "being refunded to your card" in portal.get(f"/portal/orders/{pending.order_id}").content.decode()

    expired = charged_order(creds.partner)
    with time_machine.travel(timezone.now() + timedelta(days=25)):
        orders_expire_overdue()
    body = portal.get(f"/portal/orders/{expired.order_id}").content.decode()
    assert "the tickets were not delivered in time, so the charge covers them" in body

    open_order = charged_order(creds.partner)
    assert (
        'data-testid="order-refund"'
        not in portal.get(f"/portal/orders/{open_order.order_id}").content.decode()
    )


@pytest.mark.django_db
def test_portal_order_page_shows_a_failed_refund(django_capture_on_commit_callbacks):
    from partners.portal_services import portal_user_invite

    creds = partner_with_card(REFUND_FAILS_CARD)
    user = portal_user_invite(partner=creds.partner, email="pat@card.example", password="long enough pass 1")
    portal = Client()
    portal.force_login(user.user)
    order = charged_order(creds.partner)
    with django_capture_on_commit_callbacks(execute=True):
        cancel_order(order)
    body = portal.get(f"/portal/orders/{order.order_id}").content.decode()
    assert "Refund failed" in body and "did not go through" in body


# --- the Stripe backend, through Stripe's library with a recording HTTP client ---------------------------------------
@pytest.fixture
def stripe(recording_stripe):
    return get_platform("stripe")


def test_stripe_refund_is_a_refund_of_the_payment_intent_with_the_idempotency_key(
    stripe,
    recording_stripe,
    settings,
):
    recording_stripe.answer("POST", "/v1/refunds", (200, stripe_objects.refund("re_1", status="succeeded")))
    result = stripe.refund_charge(
        charge_id="pi_1",
        amount=Decimal("120.30"),
        currency="USD",
        idempotency_key="ord_1:refund",
        reason="Order ord_1 canceled",
    )
    assert (result.refund_id, result.status, result.failure_reason) == ("re_1", "succeeded", "")
    [request] = recording_stripe.requests
    assert (request.method, request.url) == ("POST", "https://api.stripe.com/v1/refunds")
    assert request.headers["idempotency-key"] == "ord_1:refund"
    assert request.headers["authorization"] == "Bearer sk_test_recording"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.headers["stripe-version"] == settings.STRIPE_API_VERSION
    assert request.form == [
        ("payment_intent", "pi_1"),
        ("amount", "12030"),
        ("metadata[idempotency_key]", "ord_1:refund"),
        ("metadata[reason]", "Order ord_1 canceled"),
    ]


@pytest.mark.parametrize(
    ("stripe_status", "failure", "status", "reason"),
    [
        ("pending", None, "pending", ""),
        ("requires_action", None, "pending", ""),
        (
            "failed",
            "expired_or_canceled_card",
            "failed",
            "Stripe reported the refund as failed: expired or canceled card.",
        ),
        ("canceled", None, "failed", "Stripe reported the refund as canceled: canceled."),
    ],
)
def test_stripe_refund_states_map_onto_the_interface(
    stripe,
    recording_stripe,
    stripe_status,
    failure,
    status,
    reason,
):
    recording_stripe.answer(
        "GET",
        "/v1/refunds/re_2",
        (200, stripe_objects.refund("re_2", status=stripe_status, failure_reason=failure)),
    )
    result = stripe.get_refund(refund_id="re_2")
    assert (result.refund_id, result.status, result.failure_reason) == ("re_2", status, reason)
    assert recording_stripe.requests[0].method == "GET"


def test_stripe_refund_errors_are_transient_or_permanent(stripe, recording_stripe):
    refund = {
        "charge_id": "pi_1",
        "amount": Decimal("5"),
        "currency": "USD",
        "idempotency_key": "k",
        "reason": "",
    }
    recording_stripe.answer("POST", "/v1/refunds", (503, stripe_objects.error("api_error", "down")))
    with pytest.raises(PlatformUnavailable):
        stripe.refund_charge(**refund)
    recording_stripe.answer(
        "POST",
        "/v1/refunds",
        (
            400,
            stripe_objects.error(
                "invalid_request_error",
                "Charge ch_1 has already been refunded.",
                code="charge_already_refunded",
            ),
        ),
    )
    with pytest.raises(PlatformError, match="already been refunded"):
        stripe.refund_charge(**refund)


@pytest.mark.django_db
def test_cancel_on_stripe_refunds_the_payment_intent_that_charged_the_order(
    recording_stripe,
    auth_client,
    partner,
    django_capture_on_commit_callbacks,
):
    CreditCard.objects.filter(partner=partner).update(platform="stripe", platform_card_token="cus_1:pm_1")
    recording_stripe.answer("POST", "/v1/payment_intents", (200, stripe_objects.payment_intent("pi_9")))
    recording_stripe.answer(
        "POST", "/v1/refunds", (200, stripe_objects.refund("re_9", status="pending", intent_id="pi_9"))
    )
    order = make_order(partner)
    order_confirm(order_pk=order.pk)
    assert Charge.objects.get(order=order).platform == "stripe"

    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.post(f"/v1/orders/{order.order_id}/cancel").status_code == 200

    charge = Charge.objects.get(order=order)
    assert (charge.refund_status, charge.platform_refund_id) == ("pending", "re_9")  # Stripe is not done yet
    refund_call = [r for r in recording_stripe.requests if r.path == "/v1/refunds"]
    assert len(refund_call) == 1
    assert refund_call[0].headers["idempotency-key"] == f"{order.order_id}:refund"
    assert refund_call[0].params["payment_intent"] == "pi_9"
    assert refund_call[0].params["amount"] == str(int(order.total_price * 100))

    # Stripe finishes it; the sweep asks about that refund (it does not create another one).
    recording_stripe.answer(
        "GET", "/v1/refunds/re_9", (200, stripe_objects.refund("re_9", status="succeeded", intent_id="pi_9"))
    )
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        assert refunds_sweep().refunded == 1
    assert Charge.objects.get(order=order).refund_status == "succeeded"
    assert [r.path for r in recording_stripe.requests].count("/v1/refunds") == 1
    assert recording_stripe.requests[-1].path == "/v1/refunds/re_9"
