"""Real delivery: a platform's transfer e-mail, DKIM-signed with a key made for this run, sent over real SMTP
to the receiver started here on 127.0.0.1, moves a live order to ``ticket_received``; the order's
notifications are written and its webhook endpoint receives them, signed."""

from __future__ import annotations

import smtplib

import pytest
from standardwebhooks.webhooks import Webhook

from orders.models import Notification, Order
from orders.transfers.intake.smtp import TransferMailController, TransferMailHandler
from orders.transfers.models import InboundMessage
from tests.catalog.factories import RowFactory
from tests.faults.live import free_port, wait_for
from tests.testmode.conftest import api_order, client_for, make_partner_with_both_pairs
from tests.transfers.mailkit import sign
from tests.webhooks.conftest import receiver  # noqa: F401  (the webhook endpoint of this test)

from .conftest import PLATFORM, PLATFORM_FROM, mail_for

S = Order.Status


@pytest.fixture
def smtp_receiver(settings, transactional_db):
    port = free_port()
    handler = TransferMailHandler(threads=2)
    controller = TransferMailController(handler, "127.0.0.1", port)
    controller.start()
    settings.INBOUND_SMTP_LISTEN = f"127.0.0.1:{port}"
    yield port
    controller.stop()
    handler.close()


def test_a_signed_transfer_over_smtp_moves_the_order_and_its_webhooks_arrive(
    smtp_receiver,
    receiver,  # noqa: F811
    platform,
    platform_key,
    dns,
    settings,
):
    settings.PAYMENT_PLATFORM = "sandbox"
    pairs = make_partner_with_both_pairs()
    live = client_for(pairs.live)
    endpoint = live.post(
        "/v1/webhook_endpoints", {"url": receiver.url("/hooks"), "event_types": ["*"]}, format="json"
    )
    assert endpoint.status_code == 201, endpoint.content
    secret = endpoint.json()["data"]["secret"]
    row = RowFactory(
        name="A",
        available_quantity=50,
        section__name="Lower 101",
        section__event__primary_site=PLATFORM,
    )
    data = api_order(live, row, quantity=2)
    order = Order.objects.select_related("event__venue").get(order_id=data["order_id"])
    assert wait_for(lambda: Order.objects.get(pk=order.pk).status == S.AWAITING_TRANSFER, timeout=20)

    raw = sign(mail_for(order, sender=PLATFORM_FROM), platform_key)
    with smtplib.SMTP("127.0.0.1", smtp_receiver, timeout=30) as smtp:
        refused = smtp.sendmail("transfers@mail.tickets-example.com", [order.transfer_address], raw)
    assert refused == {}

    assert wait_for(lambda: Order.objects.get(pk=order.pk).status == S.TICKET_RECEIVED, timeout=30)
    order.refresh_from_db()
    assert (order.transfer.state, order.transfer.source, order.transfer.quantity_detected) == (
        "detected",
        "email",
        2,
    )
    message = InboundMessage.objects.get(order=order)
    assert (message.channel, message.authentic, message.outcome) == ("smtp", True, "matched")
    changed = Notification.objects.get(
        order=order, type="order.status_changed", payload__data__reason="transfer_detected"
    )
    updated = Notification.objects.get(order=order, type="order.transfer_updated")
    assert updated.payload["data"]["previous_transfer_state"] == "none"
    assert updated.payload["data"]["order"]["transfer"]["state"] == "detected"

    wanted = {changed.notification_id, updated.notification_id}
    assert wait_for(lambda: wanted <= {r.headers["webhook-id"] for r in receiver.requests}, timeout=30)
    assert changed.payload["data"]["order"]["status"] == "ticket_received"
    # Each delivery carries, signed, exactly the notification of its id (stamped with its sending time).
    verifier = Webhook(secret)
    stored = {changed.notification_id: changed.payload, updated.notification_id: updated.payload}
    delivered = {
        request.headers["webhook-id"]: verifier.verify(request.body, request.headers)
        for request in receiver.requests
        if request.headers["webhook-id"] in wanted
    }
    assert {i: {k: v for k, v in p.items() if k != "timestamp"} for i, p in delivered.items()} == stored
