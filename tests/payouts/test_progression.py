"""Payout progression: ticket_received → payout_in_process → scheduled → paid, with the clock moved."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from orders.models import Order
from payouts import tasks
from payouts.models import Payout
from payouts.sandbox.models import SandboxPayout
from payouts.services.progression import payout_retry, payouts_progress
from tests.conftest import make_partner
from tests.orders.factories import make_order


@pytest.fixture
def clock():
    with time_machine.travel(timezone.now(), tick=False) as traveller:
        yield traveller


def _statuses(order: Order) -> list[tuple[str, str, str]]:
    return list(order.status_history.order_by("at", "pk").values_list("from_status", "to_status", "actor"))


@pytest.mark.django_db
def test_progression_moves_order_to_paid_as_the_clock_moves(partner, settings, clock):
    settings.SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS = 60
    settings.SANDBOX_PAYOUT_PAID_AFTER_SECONDS = 300
    order = make_order(partner, status="ticket_received", quantity=2, offer_price=Decimal("99.95"))
    start = timezone.now()

    tasks.payouts_progress.delay()
    order.refresh_from_db()
    payout = Payout.objects.get(order=order)
    assert order.status == "payout_in_process"
    assert payout.status == "in_process"
    assert payout.amount == Decimal("199.90")
    assert payout.platform_payout_id.startswith("sbx_po_")
    assert payout.account_description.endswith("••••6789 (ACH)")

    clock.move_to(start + timedelta(seconds=30))
    payouts_progress()
    order.refresh_from_db()
    assert order.status == "payout_in_process"

    clock.move_to(start + timedelta(seconds=61))
    payouts_progress()
    order.refresh_from_db()
    payout.refresh_from_db()
    assert order.status == "scheduled"
    assert payout.scheduled_for == start + timedelta(seconds=300)

    clock.move_to(start + timedelta(seconds=301))
    payouts_progress()
    order.refresh_from_db()
    payout.refresh_from_db()
    assert order.status == "paid"
    assert payout.status == "paid"
    assert payout.paid_at == start + timedelta(seconds=300)
    assert _statuses(order)[-3:] == [
        ("ticket_received", "payout_in_process", "system:payouts"),
        ("payout_in_process", "scheduled", "system:payouts"),
        ("scheduled", "paid", "system:payouts"),
    ]
    assert payouts_progress().moved == 0  # nothing left to do
    assert SandboxPayout.objects.count() == 1


@pytest.mark.django_db
def test_a_late_run_walks_the_order_through_every_status(partner, clock):
    order = make_order(partner, status="ticket_received")
    payouts_progress()
    clock.shift(timedelta(hours=2))
    payouts_progress()
    order.refresh_from_db()
    assert order.status == "paid"
    assert [to for _, to, _ in _statuses(order)][-3:] == ["payout_in_process", "scheduled", "paid"]


@pytest.mark.django_db
def test_orders_before_ticket_received_get_no_payout(partner):
    for status in (*Order.OPEN_STATUSES, Order.Status.CANCELED, Order.Status.EXPIRED):
        make_order(partner, status=status)
    assert payouts_progress().created == 0
    assert not Payout.objects.exists()


@pytest.mark.django_db
def test_failed_payout_is_kept_with_reason_and_retried_by_staff(db, clock):
    from payouts.services.methods import payment_methods_create_sandbox

    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, account_number="000111111116")
    order = make_order(creds.partner, status="ticket_received")
    payouts_progress()
    clock.shift(timedelta(minutes=10))
    summary = payouts_progress()
    payout = Payout.objects.get(order=order)
    order.refresh_from_db()
    assert summary.failed == 1
    assert payout.status == "failed"
    assert "no account" in payout.failure_reason
    assert order.status == "payout_in_process"

    # The partner connects a working account; staff retries: a new attempt, a new platform payout.
    payment_methods_create_sandbox(partner=creds.partner)
    assert payout_retry(payout=payout, actor="staff:ops") is True
    assert payout_retry(payout=payout, actor="staff:ops") is False  # already pending again
    payouts_progress()
    payout.refresh_from_db()
    assert payout.attempt == 2
    assert payout.status == "in_process"
    assert SandboxPayout.objects.count() == 2
    clock.shift(timedelta(hours=1))
    payouts_progress()
    order.refresh_from_db()
    assert order.status == "paid"


@pytest.mark.django_db
def test_payout_without_account_fails_visibly(db):
    creds = make_partner(payment_methods=False)
    order = make_order(creds.partner, status="ticket_received")
    payouts_progress()
    payout = Payout.objects.get(order=order)
    assert payout.status == "failed"
    assert "No payout account" in payout.failure_reason
    order.refresh_from_db()
    assert order.status == "ticket_received"


@pytest.mark.django_db
def test_platform_outage_leaves_payout_pending_for_the_next_run(partner, monkeypatch):
    from payouts.errors import PlatformUnavailable
    from payouts.platform.sandbox.backend import SandboxPlatform

    order = make_order(partner, status="ticket_received")

    def down(self, **kwargs):
        raise PlatformUnavailable("platform down")

    with monkeypatch.context() as patch:
        patch.setattr(SandboxPlatform, "create_payout", down)
        payouts_progress()
    payout = Payout.objects.get(order=order)
    assert (payout.status, payout.last_error) == ("pending", "platform down")
    payouts_progress()
    payout.refresh_from_db()
    assert payout.status == "in_process"
    assert payout.last_error == ""


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_progression_runs_create_one_payout(db):
    creds = make_partner()
    orders = [make_order(creds.partner, status="ticket_received") for _ in range(3)]
    barrier = threading.Barrier(2)
    errors = []

    def run():
        try:
            barrier.wait()
            payouts_progress()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert Payout.objects.count() == 3
    assert SandboxPayout.objects.count() == 3
    for order in orders:
        order.refresh_from_db()
        assert order.status == "payout_in_process"
        assert order.status_history.filter(to_status="payout_in_process").count() == 1


@pytest.mark.django_db
def test_one_broken_payout_does_not_stop_the_others(partner, monkeypatch, caplog):
    from payouts.services import progression as services

    first = make_order(partner, status="ticket_received")
    second = make_order(partner, status="ticket_received")
    real = services.payout_start
    broken_pk = None

    def start(*, payout_pk):
        if payout_pk == broken_pk:
            raise RuntimeError("unexpected")
        return real(payout_pk=payout_pk)

    services.payouts_create_missing()
    broken_pk = Payout.objects.get(order=first).pk
    monkeypatch.setattr(services, "payout_start", start)
    summary = payouts_progress()
    assert summary.started == 1
    assert Payout.objects.get(order=second).status == "in_process"
    assert Payout.objects.get(order=first).status == "pending"  # tried again on the next beat
    assert "payout progression failed for one payout" in caplog.text
