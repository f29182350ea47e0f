"""The same transfer e-mail delivered twice — a sender's retry later, or two deliveries at once (real threads
on PostgreSQL, each committing and processing as the receiver does) — changes the order once: one history row
to ``ticket_received``, one ``order.transfer_updated`` of reason ``transfer_detected``."""

import threading
from email import message_from_bytes

import pytest
from django.db import connection

from orders.models import Notification, Order
from orders.transfers.intake import services as intake
from orders.transfers.models import InboundMessage

from .conftest import deliver, genuine, open_cases

S, TS, NT = Order.Status, Order.TransferState, Notification.Type


def assert_changed_once(order: Order) -> None:
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.TICKET_RECEIVED, TS.DETECTED)
    assert order.status_history.filter(to_status=S.TICKET_RECEIVED).count() == 1
    assert order.transfer_history.filter(to_status=TS.DETECTED).count() == 1
    detected = Notification.objects.filter(
        order=order, type=NT.ORDER_TRANSFER_UPDATED, payload__data__reason="transfer_detected"
    )
    assert detected.count() == 1
    assert Notification.objects.filter(order=order, type=NT.ORDER_TRANSFER_UPDATED).count() == 1
    assert (
        Notification.objects.filter(
            order=order, type=NT.ORDER_STATUS_CHANGED, payload__data__reason="transfer_detected"
        ).count()
        == 1
    )


@pytest.mark.django_db
def test_the_same_message_delivered_twice_one_after_another_changes_the_order_once(shop):
    order = shop.order()
    raw = genuine(order)
    first = deliver(raw, order, shop.capture)
    again = deliver(raw, order, shop.capture)
    assert again.pk == first.pk and InboundMessage.objects.filter(order=order).count() == 1
    assert_changed_once(order)


@pytest.mark.django_db
def test_a_relayed_copy_with_other_bytes_changes_the_order_once(shop):
    # The same message (same signature, same Message-ID) with a relay's trace header added: new bytes.
    order = shop.order()
    raw = genuine(order)
    deliver(raw, order, shop.capture)
    copy = deliver(
        b"Received: from relay.example by mx.example; Tue, 1 Dec 2026 10:00:00 +0000\r\n" + raw,
        order,
        shop.capture,
    )
    assert copy.outcome in (InboundMessage.Outcome.DUPLICATE, InboundMessage.Outcome.CASE)
    assert_changed_once(order)


def _at_once(count: int, work) -> list:
    barrier = threading.Barrier(count)
    errors: list = []

    def run(i):
        try:
            barrier.wait(10)
            work(i)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return errors


@pytest.mark.django_db(transaction=True)
def test_the_same_message_delivered_at_once_changes_the_order_once(shop):
    order = shop.order()
    raw = genuine(order)

    def receive(_i):
        # Each thread stores and commits as the receiver does; the processing runs after its commit.
        intake.message_receive(raw, recipients=[order.transfer_address], channel="smtp", peer="127.0.0.1")

    assert _at_once(4, receive) == []
    [message] = InboundMessage.objects.filter(order=order)
    assert (
        message.stage == InboundMessage.Stage.PROCESSED and message.outcome == InboundMessage.Outcome.MATCHED
    )
    assert_changed_once(order)


@pytest.mark.django_db(transaction=True)
def test_copies_with_other_bytes_delivered_at_once_change_the_order_once(shop):
    order = shop.order()
    raw = genuine(order)
    copies = [f"Received: from relay{i}.example by mx.example\r\n".encode() + raw for i in range(3)]

    def receive(i):
        intake.message_receive(
            copies[i], recipients=[order.transfer_address], channel="smtp", peer="127.0.0.1"
        )

    assert _at_once(3, receive) == []
    messages = list(InboundMessage.objects.filter(order=order))
    assert len(messages) == 3 and all(m.stage == InboundMessage.Stage.PROCESSED for m in messages)
    assert [m.outcome for m in messages].count(InboundMessage.Outcome.MATCHED) == 1
    assert_changed_once(order)


@pytest.mark.django_db(transaction=True)
def test_copies_of_one_general_admission_ticket_at_once_count_one_ticket(shop):
    # General admission adds up ticket counts by message: two copies of the one-ticket mail (each relay
    # added its own trace header) arriving at once must still count one ticket of two.
    order = shop.order(quantity=2)
    Order.objects.filter(pk=order.pk).update(general_admission=True)
    order.refresh_from_db()
    raw = genuine(order, seats=None, quantity=1)
    copies = [f"Received: from relay{i}.example by mx.example\r\n".encode() + raw for i in range(2)]

    def receive(i):
        intake.message_receive(
            copies[i], recipients=[order.transfer_address], channel="smtp", peer="127.0.0.1"
        )

    assert _at_once(2, receive) == []
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.PARTIAL)
    assert order.transfer.quantity_detected == 1
    assert order.status_history.filter(to_status=S.TICKET_RECEIVED).count() == 0
    outcomes = sorted(InboundMessage.objects.filter(order=order).values_list("outcome", flat=True))
    assert outcomes.count(InboundMessage.Outcome.PARTIAL) == 1


@pytest.mark.django_db(transaction=True)
def test_one_message_id_for_two_orders_at_once_moves_one_order_at_most(shop):
    # The platform sends a Message-ID once: the same one on mail to two orders, arriving at once, is a replay
    # the authentication cannot see yet (neither is processed); the decision sees it.
    first, second = shop.order(), shop.order()
    raw = genuine(first)
    copy = genuine(second, message_id=message_from_bytes(raw)["Message-ID"])
    pairs = [(raw, first), (copy, second)]

    def receive(i):
        mail, order = pairs[i]
        intake.message_receive(mail, recipients=[order.transfer_address], channel="smtp", peer="127.0.0.1")

    assert _at_once(2, receive) == []
    moved = [o for o in (first, second) if Order.objects.get(pk=o.pk).status == S.TICKET_RECEIVED]
    assert len(moved) == 1
    [other] = [o for o in (first, second) if o not in moved]
    assert open_cases(other) == ["replay_suspected"]
    assert Order.objects.get(pk=other.pk).transfer.state == TS.NONE
    [copy] = InboundMessage.objects.filter(order=other)
    assert copy.authentic is False and copy.verdicts["auth"]["authentic"] is False
    assert copy.verdicts["auth"]["case_kind"] == "replay_suspected"
