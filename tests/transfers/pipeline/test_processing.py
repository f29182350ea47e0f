"""Processing a stored message: once per message under concurrent delivery (real threads on PostgreSQL),
temporary DNS failures retried then a case, no raw bytes, forged mail, the sweeps that publish again."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from orders.models import Order
from orders.transfers.authenticity import authenticate as auth
from orders.transfers.authenticity.dns import DnsTempError, StaticResolver, use_resolver
from orders.transfers.decision.services.reminders import messages_process_due, partial_overdue_sweep
from orders.transfers.intake import services as intake
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.pipeline import process

from . import mail
from .conftest import transfer_order

S, TS = Order.Status, Order.TransferState


@pytest.mark.django_db(transaction=True)
def test_the_same_message_processed_twice_at_once_moves_the_order_once(kit, partner, monkeypatch):
    order = transfer_order(partner, quantity=2)
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER
    raw = kit.offer(order, seats=[1, 2])
    # Stored without running the processing: both threads process the same row.
    monkeypatch.setattr(intake, "publish_on_commit", lambda *a, **k: None)
    message = kit.deliver(raw, order)
    barrier = threading.Barrier(2)
    outcomes, errors = [], []

    def run():
        try:
            barrier.wait()
            outcomes.append(process.message_process(message_pk=message.pk))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    # One run processes it; the other, finding it claimed (skip-locked, leased), leaves it ("") rather than
    # wait, or finds it processed ("matched").
    assert errors == [] and "matched" in outcomes and set(outcomes) <= {"", "matched"}
    assert process.message_process(message_pk=message.pk) == "matched"
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED
    assert order.status_history.filter(to_status=S.TICKET_RECEIVED).count() == 1
    assert order.transfer_history.filter(to_status=TS.DETECTED).count() == 1


def _row_held_during_authentication(monkeypatch, message_pk: int, *, seconds: float) -> threading.Thread:
    """While the run authenticates (no lock held), another transaction takes the message's row and keeps it for
    ``seconds``: the run then meets it when it locks the row to decide."""
    held, real = threading.Event(), process.authenticate

    def hold():
        try:
            with transaction.atomic():
                InboundMessage.objects.select_for_update().get(pk=message_pk)
                held.set()
                time.sleep(seconds)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)

    def authenticate(*args, **kwargs):
        holder.start()
        assert held.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(process, "authenticate", authenticate)
    return holder


@pytest.mark.django_db(transaction=True)
def test_a_run_waits_for_the_row_another_transaction_holds_for_a_moment(kit, partner, monkeypatch):
    order = transfer_order(partner, quantity=2)
    monkeypatch.setattr(intake, "publish_on_commit", lambda *a, **k: None)
    message = kit.deliver(kit.offer(order, seats=[1, 2]), order)
    holder = _row_held_during_authentication(monkeypatch, message.pk, seconds=0.3)

    assert process.message_process(message_pk=message.pk) == "matched"
    holder.join(10)
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED


@pytest.mark.django_db(transaction=True)
def test_a_run_that_cannot_have_the_row_in_time_fails_transiently_and_gives_its_lease_back(
    kit, partner, monkeypatch
):
    order = transfer_order(partner, quantity=2)
    monkeypatch.setattr(intake, "publish_on_commit", lambda *a, **k: None)
    monkeypatch.setattr(process, "DECIDE_LOCK_WAIT_MS", 200)
    message = kit.deliver(kit.offer(order, seats=[1, 2]), order)
    real = process.authenticate
    holder = _row_held_during_authentication(monkeypatch, message.pk, seconds=1.5)

    with pytest.raises(OperationalError, match="lock timeout"):
        process.message_process(message_pk=message.pk)
    holder.join(10)
    message.refresh_from_db()
    assert message.next_attempt_at is None and message.stage != "processed"  # the task's retry may run it
    monkeypatch.setattr(process, "authenticate", real)
    assert process.message_process(message_pk=message.pk) == "matched"
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED


@pytest.mark.django_db(transaction=True)
def test_two_halves_at_once_add_up_to_the_whole(kit, partner, monkeypatch):
    order = transfer_order(partner, quantity=4)
    monkeypatch.setattr(intake, "publish_on_commit", lambda *a, **k: None)
    messages = [kit.deliver(kit.offer(order, seats=seats), order) for seats in ([1, 2], [3, 4])]
    barrier = threading.Barrier(2)

    def run(pk):
        try:
            barrier.wait()
            process.message_process(message_pk=pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(m.pk,)) for m in messages]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED and order.transfer.quantity_detected == 4


@pytest.mark.django_db
def test_temporary_dns_failure_is_retried_then_opens_auth_temperror(partner, monkeypatch):
    # A live platform's mail (its sender domain listed for the order's site) whose key DNS cannot give for now.
    order = transfer_order(partner, quantity=2, livemode=True)
    site = order.event.primary_site
    monkeypatch.setattr(
        auth, "platform_sender_domains", lambda s: {"tickets.example"} if s == site else set()
    )
    signer = mail.Signer(domain="tickets.example", selector="k1")
    raw = mail.compose(order, seats=[1, 2]).replace(
        b"From: Sandbox Tickets <transfers@sandbox.invalid>", b"From: Tickets <transfers@tickets.example>"
    )
    [received] = intake.message_receive(signer.sign(raw), recipients=[order.transfer_address], channel="smtp")
    message = received.message
    failing = StaticResolver({signer.record_name: DnsTempError("no answer within 5 s")})
    with use_resolver(failing):
        _retried_four_times_then_a_case(message)
    assert message.verdicts["auth"]["dkim"]["result"] == "temperror"
    assert TransferCase.objects.filter(order=order, kind="auth_temperror", message=message).exists()
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER and order.transfer.case_open


def _retried_four_times_then_a_case(message):
    for attempt, minutes in enumerate((1, 5, 15, 60), start=1):
        before = timezone.now()
        assert process.message_process(message_pk=message.pk) == ""
        message.refresh_from_db()
        assert message.stage == "deferred" and message.attempts == attempt
        assert before + timedelta(minutes=minutes) <= message.next_attempt_at
        assert message.next_attempt_at <= timezone.now() + timedelta(minutes=minutes)
        # Not due yet: a second publish changes nothing; the sweep finds it once due.
        assert process.message_process(message_pk=message.pk) == ""
        assert message.pk not in messages_process_due()
        InboundMessage.objects.filter(pk=message.pk).update(
            next_attempt_at=timezone.now() - timedelta(seconds=1)
        )
        assert message.pk in messages_process_due()
    assert process.message_process(message_pk=message.pk) == "case"
    message.refresh_from_db()
    assert message.stage == "processed" and message.attempts == 5


@pytest.mark.django_db
def test_mail_signed_by_another_key_opens_unverified(kit, partner):
    order = transfer_order(partner, quantity=2)
    forged = mail.Signer().sign(mail.compose(order, seats=[1, 2]))
    message = kit.process(forged, order)
    order.refresh_from_db()
    assert message.authentic is False and message.outcome == "case"
    assert order.status == S.AWAITING_TRANSFER
    assert TransferCase.objects.filter(order=order, kind="unverified").exists()


@pytest.mark.django_db
def test_sandbox_mail_on_a_live_order_opens_unverified(kit, partner):
    order = transfer_order(partner, quantity=2, livemode=True)
    message = kit.process(kit.offer(order, seats=[1, 2]), order)
    order.refresh_from_db()
    assert message.authentic is False and order.status == S.AWAITING_TRANSFER
    assert TransferCase.objects.filter(order=order, kind="unverified").exists()


@pytest.mark.django_db
def test_no_raw_message_opens_unverifiable(partner):
    order = transfer_order(partner, quantity=2)
    [received] = intake.message_receive(
        None, recipients=[order.transfer_address], channel="mailgun", verdicts={"provider": {"subject": "x"}}
    )
    assert process.message_process(message_pk=received.message.pk) == "case"
    assert TransferCase.objects.filter(order=order, kind="unverifiable").exists()


@pytest.mark.django_db
def test_received_messages_older_than_two_minutes_are_published_again(kit, partner):
    order = transfer_order(partner, quantity=2)
    message = kit.deliver(kit.offer(order, seats=[1, 2]), order)
    assert message.pk not in messages_process_due()
    InboundMessage.objects.filter(pk=message.pk).update(received_at=timezone.now() - timedelta(minutes=3))
    assert message.pk in messages_process_due()
    process.message_process(message_pk=message.pk)
    assert message.pk not in messages_process_due()


@pytest.mark.django_db
def test_partial_overdue_opens_once_the_in_hand_date_begins(kit, partner):
    order = transfer_order(partner, quantity=2)
    kit.process(kit.offer(order, seats=[1]), order)
    order.refresh_from_db()
    begins = timezone.datetime.combine(
        order.in_hand_date, timezone.datetime.min.time(), tzinfo=order.event.zone
    )
    assert partial_overdue_sweep(now=begins - timedelta(minutes=1)) == []
    assert partial_overdue_sweep(now=begins + timedelta(minutes=1)) == [order.order_id]
    assert partial_overdue_sweep(now=begins + timedelta(hours=2)) == []  # once per order
    assert TransferCase.objects.filter(order=order, kind="partial_overdue").count() == 1
