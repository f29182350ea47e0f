"""Recall end to end: the platform's authentic cancel notice after the order reached ``ticket_received``
returns it to ``awaiting_transfer`` (reason ``transfer_recalled``) and the seller is e-mailed the transfer
address again (a test order's seller mail goes to the partner, marked ``[TEST]``); after the payout started a
``recalled_after_payout`` case opens and nothing is reversed."""

import pytest
from django.core import mail as outbox_mail

from orders.models import Notification, Order
from orders.services import order_transition
from orders.transfers.models import InboundMessage
from tests.transfers.mailkit import sign

from .conftest import PLATFORM, PLATFORM_FROM, deliver, genuine, mail_for, open_cases, snapshot

S, TS, NT = Order.Status, Order.TransferState, Notification.Type
pytestmark = pytest.mark.django_db


def test_an_authentic_cancel_notice_returns_a_received_test_order_to_awaiting_transfer(shop):
    order = shop.order()
    deliver(genuine(order), order, shop.capture)
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED
    outbox_mail.outbox.clear()

    message = deliver(genuine(order, kind="transfer_canceled"), order, shop.capture)
    assert message.authentic is True and message.outcome == InboundMessage.Outcome.RECALLED
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.RECALLED)
    assert order.transfer.quantity_detected == 0 and order.transfer.detected_at is None
    back = order.status_history.filter(to_status=S.AWAITING_TRANSFER).latest("id")
    assert back.from_status == S.TICKET_RECEIVED
    changed = Notification.objects.filter(order=order, type=NT.ORDER_STATUS_CHANGED).latest("id")
    assert changed.payload["data"]["reason"] == "transfer_recalled"
    assert changed.payload["data"]["previous_status"] == S.TICKET_RECEIVED
    updated = Notification.objects.filter(order=order, type=NT.ORDER_TRANSFER_UPDATED).latest("id")
    assert updated.payload["data"]["reason"] == "transfer_recalled"
    assert updated.payload["data"]["previous_transfer_state"] == TS.DETECTED
    assert shop.test.get(f"/v1/orders/{order.order_id}").json()["data"]["status"] == S.AWAITING_TRANSFER

    # The seller is asked again — for a test order, the partner's contact e-mail, marked [TEST].
    [sent] = outbox_mail.outbox
    assert sent.to == [shop.partner.contact_email] and sent.subject.startswith("[TEST] ")
    assert order.transfer_address in sent.body

    # A new complete transfer is received again.
    deliver(genuine(order), order, shop.capture)
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.TICKET_RECEIVED, TS.DETECTED)


def test_a_cancel_notice_after_the_payout_started_opens_a_case_and_reverses_nothing(shop, platform_key):
    order = shop.order(live=True, primary_site=PLATFORM)
    deliver(sign(mail_for(order, sender=PLATFORM_FROM), platform_key), order, shop.capture)
    accepted = deliver(
        sign(mail_for(order, kind="transfer_accepted", sender=PLATFORM_FROM), platform_key),
        order,
        shop.capture,
    )
    assert accepted.outcome == InboundMessage.Outcome.ACCEPTED
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.TICKET_RECEIVED, TS.ACCEPTED)
    with shop.capture(execute=True):
        order = order_transition(order=order, to=S.PAYOUT_IN_PROCESS, actor="system:payouts", reason="payout")
    before = snapshot(order)
    outbox_mail.outbox.clear()

    raw = sign(mail_for(order, kind="transfer_canceled", sender=PLATFORM_FROM), platform_key)
    message = deliver(raw, order, shop.capture)
    assert message.authentic is True and message.outcome == InboundMessage.Outcome.CASE
    assert snapshot(order) == before
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.PAYOUT_IN_PROCESS, TS.ACCEPTED)
    assert open_cases(order) == ["recalled_after_payout"] and order.transfer.case_open is True
    assert outbox_mail.outbox == []  # nothing was reversed: the seller is not asked to transfer again


def test_a_forged_cancel_notice_recalls_nothing(shop):
    order = shop.order()
    deliver(genuine(order), order, shop.capture)
    order.refresh_from_db()
    before = snapshot(order)
    message = deliver(mail_for(order, kind="transfer_canceled"), order, shop.capture)  # unsigned
    assert message.authentic is False and snapshot(order) == before
    assert order.status == S.TICKET_RECEIVED and open_cases(order) == ["unverified"]


def test_a_live_orders_recall_e_mails_the_seller_himself(shop, platform_key):
    order = shop.order(live=True, primary_site=PLATFORM, seller_email="seller@example.com")
    deliver(sign(mail_for(order, sender=PLATFORM_FROM), platform_key), order, shop.capture)
    outbox_mail.outbox.clear()
    raw = sign(mail_for(order, kind="transfer_canceled", sender=PLATFORM_FROM), platform_key)
    message = deliver(raw, order, shop.capture)
    order.refresh_from_db()
    assert message.outcome == InboundMessage.Outcome.RECALLED
    assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.RECALLED)
    [sent] = outbox_mail.outbox
    assert sent.to == ["seller@example.com"] and not sent.subject.startswith("[TEST]")
    assert order.transfer_address in sent.body
