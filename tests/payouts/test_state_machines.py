"""The payout and refund state machines: only legal moves, a history row for each, one winner under a race."""

import threading

import pytest
from django.db import connections

from config.core.statemachine import IllegalStateMove
from orders.models import Order
from orders.services import CANCELABLE, LEGAL_TRANSITIONS, order_cancel
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge, Payout, PayoutStatusHistory, RefundStatusHistory
from payouts.services import progression, refunds
from payouts.services.progression import PAYOUT_TRANSITIONS, payout_retry, payout_transition, payouts_progress
from payouts.services.refunds import (
    REFUND_TRANSITIONS,
    refund_for_order,
    refund_request,
    refund_retry,
    refund_transition,
)
from tests.conftest import make_partner
from tests.orders.factories import make_order

P = Payout.Status
R = Charge.RefundStatus


def _payout(partner, status: str) -> Payout:
    order = make_order(partner, status="ticket_received")
    return Payout.objects.create(order=order, partner=partner, amount=order.total_price, status=status)


def _charge(partner, *, refund_status: str = R.NONE) -> Charge:
    """A succeeded charge of a canceled order, its refund set to ``refund_status`` (test setup, no history).

    In ``transaction=True`` tests the order was confirmed and refunded on commit already: that is reset."""
    order = make_order(partner, status="canceled")
    charge, _ = Charge.objects.get_or_create(
        order=order,
        defaults={
            "partner": partner,
            "amount": order.total_price,
            "platform": "sandbox",
            "idempotency_key": order.order_id,
            "platform_charge_id": "sbx_ch_test",
        },
    )
    Charge.objects.filter(pk=charge.pk).update(status=Charge.Status.SUCCEEDED, refund_status=refund_status)
    RefundStatusHistory.objects.filter(charge=charge).delete()
    charge.refresh_from_db()
    return charge


def _history(model, **filters) -> list[tuple[str, str, str, str]]:
    rows = model.objects.filter(**filters).order_by("at", "pk")
    return list(rows.values_list("from_status", "to_status", "actor", "reason"))


def _race(count: int, work) -> list[str]:
    """Run ``work(index)`` in ``count`` threads released at once; each result or exception class name."""
    barrier = threading.Barrier(count)
    results: list[str] = []

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(str(work(index)))
        except Exception as exc:
            results.append(type(exc).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


# --- the tables ---------------------------------------------------------------------------------------------
def test_every_status_has_a_row_in_its_table():
    assert set(PAYOUT_TRANSITIONS) == set(P.values)
    assert set(REFUND_TRANSITIONS) == set(R.values)
    assert set(LEGAL_TRANSITIONS) == set(Order.Status.values)


def test_the_order_groups_follow_the_life_cycle():
    assert frozenset(Order.OPEN_STATUSES) == CANCELABLE
    # Settled: nothing more happens to it, but for a paid order whose payout the platform fails afterwards.
    final = {s for s, targets in LEGAL_TRANSITIONS.items() if not targets}
    assert final | {Order.Status.PAID} == set(Order.SETTLED_STATUSES)
    assert LEGAL_TRANSITIONS[Order.Status.PAID] == {Order.Status.PAYOUT_IN_PROCESS}
    path = Order.PAYOUT_PATH
    assert all(path[i + 1] in LEGAL_TRANSITIONS[path[i]] for i in range(len(path) - 1))


# --- payouts ------------------------------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("start", "to"),
    [(P.FAILED, P.PAID), (P.PAID, P.PENDING), (P.SCHEDULED, P.IN_PROCESS), (P.PENDING, P.PENDING)],
)
def test_payout_transition_refuses_illegal_moves(partner, start, to):
    payout = _payout(partner, start)
    with pytest.raises(IllegalStateMove) as refused:
        payout_transition(payout=payout, to=to, actor="staff:test")
    assert (refused.value.from_state, refused.value.to_state) == (start, to)
    assert Payout.objects.get(pk=payout.pk).status == start
    assert not PayoutStatusHistory.objects.filter(payout=payout).exists()


@pytest.mark.django_db
def test_payout_transition_refuses_an_unknown_status(partner):
    payout = _payout(partner, P.PENDING)
    with pytest.raises(ValueError, match="Unknown payout status"):
        payout_transition(payout=payout, to="lost", actor="staff:test")


@pytest.mark.django_db
def test_progression_writes_the_payout_history(partner):
    order = make_order(partner, status="ticket_received")
    payouts_progress()
    payout = Payout.objects.get(order=order)
    assert payout.status == P.IN_PROCESS
    history = PayoutStatusHistory.objects.get(payout=payout)
    assert (history.from_status, history.to_status, history.actor) == (
        P.PENDING,
        P.IN_PROCESS,
        "system:payouts",
    )
    assert history.at is not None and "in_process" in history.reason


@pytest.mark.django_db
def test_a_failed_payout_and_its_retry_are_in_the_history(db):
    creds = make_partner(payment_methods=False)  # no payout account: the start fails
    order = make_order(creds.partner, status="ticket_received")
    payouts_progress()
    payout = Payout.objects.get(order=order)
    assert payout.status == P.FAILED
    assert payout_retry(payout=payout, actor="staff:ops")
    assert payout_retry(payout=payout, actor="staff:ops") is False  # pending already: refused, not repeated
    payout.refresh_from_db()
    assert (payout.status, payout.attempt, payout.failure_reason) == (P.PENDING, 2, "")
    assert _history(PayoutStatusHistory, payout=payout) == [
        (
            P.PENDING,
            P.FAILED,
            "system:payouts",
            "No payout account on file: the partner must connect one in the portal.",
        ),
        (P.FAILED, P.PENDING, "staff:ops", "Retried by staff"),
    ]


@pytest.mark.django_db
def test_staff_see_the_payout_and_refund_history_in_the_admin(partner):
    from django.contrib.auth import get_user_model
    from django.test import Client

    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("ops", "ops@service.example", "pass 5511 x"))
    payout = _payout(partner, P.FAILED)
    payout_retry(payout=payout, actor="staff:ops")
    page = staff.get(f"/admin/payouts/payout/{payout.pk}/change/").content.decode()
    assert "Retried by staff" in page and "staff:ops" in page
    charge = _charge(partner)
    refund_request(order_pk=charge.order_id)
    page = staff.get(f"/admin/payouts/charge/{charge.pk}/change/").content.decode()
    assert "Refund status history" in page and "Order canceled" in page


@pytest.mark.django_db(transaction=True)
def test_concurrent_payout_retries_are_decided_by_the_row_lock(monkeypatch):
    published = []
    monkeypatch.setattr(progression, "publish_on_commit", lambda name, *args: published.append(name))
    creds = make_partner()
    payout = _payout(creds.partner, P.FAILED)
    results = _race(8, lambda i: payout_retry(payout=Payout.objects.get(pk=payout.pk), actor=f"staff:{i}"))
    assert sorted(results) == ["False"] * 7 + ["True"]
    payout.refresh_from_db()
    assert (payout.status, payout.attempt) == (P.PENDING, 2)  # one new attempt, not eight
    assert PayoutStatusHistory.objects.filter(payout=payout).count() == 1
    assert published == ["payouts.tasks.payouts_progress"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_payout_transitions_to_different_ends_move_each_step_once():
    creds = make_partner()
    payout = _payout(creds.partner, P.SCHEDULED)
    targets = [P.PAID, P.FAILED] * 4

    def move(index: int) -> str:
        moved = payout_transition(
            payout=Payout.objects.get(pk=payout.pk), to=targets[index], actor="system:t"
        )
        return moved.status

    results = _race(len(targets), move)
    # A failure is final and a paid payout can still fail: either the failure came first, or paid then failed.
    history = _history(PayoutStatusHistory, payout=payout)
    assert history in (
        [(P.SCHEDULED, P.FAILED, "system:t", "")],
        [(P.SCHEDULED, P.PAID, "system:t", ""), (P.PAID, P.FAILED, "system:t", "")],
    )
    assert results.count("IllegalStateMove") == len(targets) - len(history)
    assert Payout.objects.get(pk=payout.pk).status == P.FAILED


# --- refunds ------------------------------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("start", "to"),
    [
        (R.NONE, R.SUCCEEDED),
        (R.NONE, R.FAILED),
        (R.SUCCEEDED, R.PENDING),
        (R.PENDING, R.NONE),
        (R.FAILED, R.FAILED),
    ],
)
def test_refund_transition_refuses_illegal_moves(partner, start, to):
    charge = _charge(partner, refund_status=start)
    with pytest.raises(IllegalStateMove):
        refund_transition(charge=charge, to=to, actor="staff:test")
    assert Charge.objects.get(pk=charge.pk).refund_status == start
    assert not RefundStatusHistory.objects.filter(charge=charge).exists()


@pytest.mark.django_db
def test_refund_request_and_retry_write_the_refund_history(partner):
    charge = _charge(partner)
    assert refund_request(order_pk=charge.order_id)
    assert refund_request(order_pk=charge.order_id) is False  # marked already
    refund_transition(charge=charge, to=R.FAILED, actor="system:refunds", reason="card account closed")
    assert refund_retry(charge=charge, actor="staff:ops")
    charge.refresh_from_db()
    assert (charge.refund_status, charge.refund_attempt) == (R.PENDING, 2)
    assert charge.refund_requested_at is not None
    assert _history(RefundStatusHistory, charge=charge) == [
        (R.NONE, R.PENDING, "system:refunds", "Order canceled"),
        (R.PENDING, R.FAILED, "system:refunds", "card account closed"),
        (R.FAILED, R.PENDING, "staff:ops", "Retried by staff"),
    ]


@pytest.mark.django_db
def test_a_refund_at_the_platform_is_recorded_from_none_to_succeeded(partner):
    order = make_order(partner)
    order_confirm(order_pk=order.pk)  # charged by the sandbox
    order = Order.objects.get(pk=order.pk)
    order_cancel(order=order, actor="partner:test")
    charge = refund_for_order(order=order)
    assert charge.refund_status == R.SUCCEEDED and charge.refunded_at is not None
    assert [(f, t) for f, t, *_ in _history(RefundStatusHistory, charge=charge)] == [
        (R.NONE, R.PENDING),
        (R.PENDING, R.SUCCEEDED),
    ]


@pytest.mark.django_db(transaction=True)
def test_concurrent_refund_requests_are_decided_by_the_row_lock():
    creds = make_partner()
    charge = _charge(creds.partner)
    results = _race(8, lambda i: refund_request(order_pk=charge.order_id))
    assert sorted(results) == ["False"] * 7 + ["True"]
    assert _history(RefundStatusHistory, charge=charge) == [
        (R.NONE, R.PENDING, "system:refunds", "Order canceled")
    ]


@pytest.mark.django_db(transaction=True)
def test_concurrent_refund_retries_make_one_new_attempt(monkeypatch):
    published = []
    monkeypatch.setattr(refunds, "publish_on_commit", lambda name, *args: published.append(name))
    creds = make_partner()
    charge = _charge(creds.partner, refund_status=R.FAILED)
    results = _race(6, lambda i: refund_retry(charge=Charge.objects.get(pk=charge.pk), actor=f"staff:{i}"))
    assert sorted(results) == ["False"] * 5 + ["True"]
    charge.refresh_from_db()
    assert (charge.refund_status, charge.refund_attempt) == (R.PENDING, 2)
    assert RefundStatusHistory.objects.filter(charge=charge).count() == 1
    assert published == ["payouts.tasks.refund_for_order"]


@pytest.mark.django_db
def test_a_batch_move_writes_each_row_the_changes_its_locked_row_asks_for_and_announces_each_save(
    partner, django_assert_num_queries
):
    from django.db import transaction
    from django.db.models.signals import post_save

    from payouts.services.progression import PAYOUT_MACHINE

    first, second, third = (_payout(partner, P.PENDING) for _ in range(3))
    Payout.objects.filter(pk=second.pk).update(attempt=2)
    saved = []

    def announced(sender, instance, update_fields, **kwargs):
        saved.append((instance.pk, instance.status, "failure_reason" in update_fields))

    post_save.connect(announced, sender=Payout, dispatch_uid="tests.batch-move")
    try:
        # One lock, one UPDATE for each set of values (attempts 1 and 2), one INSERT of the history rows.
        with transaction.atomic(), django_assert_num_queries(6):
            moved = PAYOUT_MACHINE.move_many(
                objs=[first, second, third],
                to=P.IN_PROCESS,
                actor="system:tests",
                changes=lambda locked: {"failure_reason": f"attempt {locked.attempt}"},
            )
    finally:
        post_save.disconnect(sender=Payout, dispatch_uid="tests.batch-move")
    assert [(row.pk, from_state) for row, from_state in moved] == [
        (first.pk, P.PENDING),
        (second.pk, P.PENDING),
        (third.pk, P.PENDING),
    ]
    assert second.failure_reason == "attempt 2" and second.status == P.IN_PROCESS
    assert dict(Payout.objects.values_list("pk", "failure_reason")) == {
        first.pk: "attempt 1",
        second.pk: "attempt 2",
        third.pk: "attempt 1",
    }
    assert sorted(saved) == sorted((p.pk, P.IN_PROCESS, True) for p in (first, second, third))
    assert PayoutStatusHistory.objects.filter(to_status=P.IN_PROCESS, actor="system:tests").count() == 3
