"""The decision of an authentic transfer e-mail: full match, per-ticket series adding up, mismatch, accepted,
recall before and after the payout started, an order not yet confirmed, unparsed mail."""

import pytest
from django.core import mail as outbox_mail

from orders.models import Notification, Order
from orders.signals import Transition
from orders.transfers.decision.subscribers import orders_without_waiting_mail
from orders.transfers.models import InboundMessage, TransferCase, TransferEvidence
from orders.transfers.pipeline import process

from .conftest import transfer_order

S, TS = Order.Status, Order.TransferState
pytestmark = pytest.mark.django_db


def test_full_match_moves_the_order_to_ticket_received(kit, partner):
    order = transfer_order(partner, quantity=2)
    message = kit.process(kit.offer(order, seats=[1, 2]), order)
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.source) == (
        S.TICKET_RECEIVED,
        TS.DETECTED,
        "email",
    )
    assert order.transfer.quantity_detected == 2
    assert (
        message.stage == InboundMessage.Stage.PROCESSED and message.outcome == InboundMessage.Outcome.MATCHED
    )
    assert message.authentic is True and message.platform == "sandbox" and message.kind == "transfer_offer"
    assert "@sandbox.invalid" in message.header_from and message.message_id and message.header_date
    assert set(message.verdicts) >= {"auth", "parse", "match", "decision"}
    assert message.verdicts["match"]["matched"] is True
    evidence = TransferEvidence.objects.get(message=message)
    assert evidence.seats == ["1", "2"] and evidence.accept_link.startswith("https://accept.sandbox.invalid/")
    assert any("transfer_detected" in str(n.payload) for n in Notification.objects.filter(order=order))
    assert Notification.objects.filter(order=order, type=Notification.Type.ORDER_TRANSFER_UPDATED).exists()


def test_per_ticket_mails_add_up_by_distinct_seats(kit, partner, django_capture_on_commit_callbacks):
    order = transfer_order(partner, quantity=4)
    first = kit.process(kit.offer(order, seats=[1, 2]), order)
    order.refresh_from_db()
    assert first.outcome == "partial" and order.transfer.state == TS.PARTIAL
    assert order.transfer.quantity_detected == 2 and order.status == S.AWAITING_TRANSFER
    # Seat 2 again with seat 3: counted once.
    kit.process(kit.offer(order, seats=["02", 3]), order)
    order.refresh_from_db()
    assert order.transfer.quantity_detected == 3 and order.status == S.AWAITING_TRANSFER
    last = kit.process(kit.offer(order, seats=[4]), order)
    order.refresh_from_db()
    assert last.outcome == "matched" and order.status == S.TICKET_RECEIVED
    assert order.transfer.state == TS.DETECTED and order.transfer.quantity_detected == 4


def test_general_admission_counts_tickets(kit, partner):
    order = transfer_order(partner, quantity=3, general_admission=True)
    kit.process(kit.offer(order, quantity=1), order)
    order.refresh_from_db()
    assert order.transfer.state == TS.PARTIAL and order.transfer.quantity_detected == 1
    kit.process(kit.offer(order, quantity=2), order)
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED


def test_partial_reminder_mails_what_is_missing_an_hour_later_once(kit, partner):
    from datetime import timedelta

    from django.utils import timezone

    from orders.transfers.decision.services.reminders import partial_reminder, partial_reminders_due

    order = transfer_order(partner, quantity=3)
    kit.process(kit.offer(order, seats=[1]), order)
    outbox_mail.outbox.clear()
    assert (
        partial_reminder(order.pk) is False
    )  # too early (the embedded default runs the delayed task at once)
    later = timezone.now() + timedelta(hours=1, minutes=1)
    assert partial_reminders_due(now=later) == 1
    [sent] = outbox_mail.outbox
    # A test order's seller mail goes to the partner's contact e-mail, marked [TEST].
    assert sent.to == [partner.contact_email] and sent.subject.startswith("[TEST] ")
    assert (
        "2 of 3 tickets" in sent.subject
        and order.transfer_address in sent.body
        and "Seats received: 1" in sent.body
    )
    assert partial_reminder(order.pk, now=later) is False and partial_reminders_due(now=later) == 0  # once
    # Once complete, there is nothing to remind.
    kit.process(kit.offer(order, seats=[2]), order)
    kit.process(kit.offer(order, seats=[3]), order)
    outbox_mail.outbox.clear()
    assert partial_reminders_due(now=later + timedelta(hours=2)) == 0 and outbox_mail.outbox == []


def test_mismatch_opens_a_case_and_leaves_the_order_awaiting(kit, partner):
    order = transfer_order(partner, quantity=2)
    message = kit.process(kit.offer(order, seats=[1, 2], row="B"), order)
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER and order.transfer.state == TS.MISMATCH
    assert order.transfer.case_open is True
    case = TransferCase.objects.get(order=order, kind="mismatch")
    assert case.message == message and case.details["fields"]["row"]["ok"] is False
    assert "similarity" in case.details["fields"]["row"] and "Row: B" in case.details["text"]
    assert message.outcome == "case" and message.verdicts["match"]["matched"] is False


def test_transfer_accepted_after_detection(kit, partner):
    order = transfer_order(partner, quantity=2)
    early = kit.process(kit.notice(order, "transfer_accepted"), order)
    order.refresh_from_db()
    assert early.outcome == "ignored" and order.transfer.state == TS.NONE  # evidence only
    assert TransferEvidence.objects.filter(message=early, kind="transfer_accepted").exists()
    kit.process(kit.offer(order, seats=[1, 2]), order)
    order.refresh_from_db()
    # The acceptance that came first is applied once the transfer is detected.
    assert order.status == S.TICKET_RECEIVED and order.transfer.state == TS.ACCEPTED


def test_transfer_accepted_moves_a_detected_transfer_to_accepted(kit, partner):
    order = transfer_order(partner, quantity=1)
    kit.process(kit.offer(order, seats=[7]), order)
    message = kit.process(kit.notice(order, "transfer_accepted"), order)
    order.refresh_from_db()
    assert (
        message.outcome == "accepted" and order.transfer.state == TS.ACCEPTED and order.transfer.accepted_at
    )


def test_recall_before_payout_returns_the_order_to_awaiting_transfer(
    kit, partner, django_capture_on_commit_callbacks
):
    order = transfer_order(partner, quantity=2)
    kit.process(kit.offer(order, seats=[1, 2]), order)
    outbox_mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        message = kit.process(kit.notice(order, "transfer_canceled"), order)
    order.refresh_from_db()
    assert message.outcome == "recalled"
    assert order.status == S.AWAITING_TRANSFER and order.transfer.state == TS.RECALLED
    assert order.status_history.filter(to_status=S.AWAITING_TRANSFER).exists()
    # The seller (the partner, for a test order) is given the transfer address again.
    assert any(
        order.transfer_address in m.body and m.subject.startswith("[TEST]") for m in outbox_mail.outbox
    )
    # The offers before the recall no longer count: a new transfer must arrive in full.
    kit.process(kit.offer(order, seats=[1]), order)
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER and order.transfer.state == TS.PARTIAL
    kit.process(kit.offer(order, seats=[2]), order)
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED


def test_recall_after_payout_started_opens_a_case_only(kit, partner):
    from orders.services import order_transition

    order = transfer_order(partner, quantity=2)
    kit.process(kit.offer(order, seats=[1, 2]), order)
    kit.process(kit.notice(order, "transfer_accepted"), order)
    order.refresh_from_db()
    order = order_transition(order=order, to=S.PAYOUT_IN_PROCESS, actor="staff:test", reason="test")
    message = kit.process(kit.notice(order, "transfer_canceled"), order)
    order.refresh_from_db()
    assert order.status == S.PAYOUT_IN_PROCESS and order.transfer.state == TS.ACCEPTED
    assert TransferCase.objects.filter(order=order, kind="recalled_after_payout", state="open").exists()
    assert message.outcome == "case"


def test_an_order_not_yet_confirmed_waits_for_its_confirmation(kit, partner):
    order = transfer_order(partner, status="accepted", quantity=2)
    message = kit.process(kit.offer(order, seats=[1, 2]), order)
    assert (
        message.stage == "deferred" and message.verdicts["decision"]["action"] == "waiting_for_confirmation"
    )
    order.refresh_from_db()
    assert order.status == S.ACCEPTED
    from orders.services import order_transition

    order_transition(order=order, to=S.AWAITING_TRANSFER, actor="system:test", reason="confirmed")
    InboundMessage.objects.filter(pk=message.pk).update(next_attempt_at=message.received_at)
    process.message_process(message_pk=message.pk)
    message.refresh_from_db()
    order.refresh_from_db()
    assert message.outcome == "matched" and order.status == S.TICKET_RECEIVED


def test_unparsed_mail_opens_a_case_showing_its_text(kit, partner):
    order = transfer_order(partner, quantity=2)
    message = kit.process(kit.offer(order, body="Hello, here are your tickets.\nEnjoy the show!\n"), order)
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER and order.transfer.state == TS.NONE
    case = TransferCase.objects.get(order=order, kind="unparsed")
    assert "Enjoy the show!" in case.details["text"] and "missing" in case.summary.lower()
    assert message.outcome == "case"


def test_a_message_processed_again_changes_nothing(kit, partner):
    order = transfer_order(partner, quantity=2)
    message = kit.process(kit.offer(order, seats=[1, 2]), order)
    history = order.status_history.count()
    assert process.message_process(message_pk=message.pk) == "matched"
    assert order.status_history.count() == history


def test_mail_waiting_for_the_confirmation_is_released_by_the_delivery_of_the_move(
    kit, partner, django_capture_on_commit_callbacks, django_assert_num_queries
):
    order = transfer_order(partner, status="accepted", quantity=2)
    message = kit.process(kit.offer(order, seats=[1, 2]), order)
    assert message.stage == "deferred"
    other = transfer_order(partner, status="accepted", quantity=2)
    moves = [
        Transition(
            order_pk=o.pk, from_status="accepted", to_status="awaiting_transfer", at=o.created_at, actor="t"
        )
        for o in (order, other)
    ]
    with django_assert_num_queries(1):  # one statement for a batch
        assert orders_without_waiting_mail(moves) == {other.pk}

    from orders.services import order_transition

    # The move's order.status_changed is delivered after commit (in-process here): the subscriber releases it.
    with django_capture_on_commit_callbacks(execute=True):
        order_transition(order=order, to=S.AWAITING_TRANSFER, actor="system:test", reason="confirmed")
    message.refresh_from_db()
    order.refresh_from_db()
    assert message.outcome == "matched" and order.status == S.TICKET_RECEIVED
