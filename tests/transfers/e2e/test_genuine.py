"""The genuine counterpart of the forgery matrix: the sandbox platform's authentic transfer e-mail to a test
order, handed to the intake as the SMTP receiver does, moves the order to ``ticket_received`` with no staff
step, and the partner sees it in the API and the notifications."""

import pytest

from orders.models import Notification, Order
from orders.transfers.models import InboundMessage, TransferEvidence

from .conftest import deliver, genuine, open_cases

S, TS, NT = Order.Status, Order.TransferState, Notification.Type
pytestmark = pytest.mark.django_db


def test_the_platforms_genuine_mail_moves_a_test_order_to_ticket_received(shop):
    order = shop.order(quantity=2)
    message = deliver(genuine(order), order, shop.capture)

    assert message.authentic is True and message.stage == InboundMessage.Stage.PROCESSED
    assert message.outcome == InboundMessage.Outcome.MATCHED and message.platform == "sandbox"
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.source) == (
        S.TICKET_RECEIVED,
        TS.DETECTED,
        "email",
    )
    assert order.transfer.quantity_detected == 2 and order.transfer.detected_at is not None
    assert open_cases(order) == []
    assert TransferEvidence.objects.filter(order=order, message=message, matched=True).count() == 1
    history = order.status_history.get(to_status=S.TICKET_RECEIVED)
    assert history.from_status == S.AWAITING_TRANSFER and history.actor == "system:transfers"

    changed = Notification.objects.get(
        order=order, type=NT.ORDER_STATUS_CHANGED, payload__data__reason="transfer_detected"
    )
    assert changed.livemode is False
    assert changed.payload["data"]["previous_status"] == S.AWAITING_TRANSFER
    assert changed.payload["data"]["order"]["status"] == S.TICKET_RECEIVED
    [updated] = Notification.objects.filter(order=order, type=NT.ORDER_TRANSFER_UPDATED)
    assert updated.payload["data"]["previous_transfer_state"] == TS.NONE
    assert updated.payload["data"]["reason"] == "transfer_detected"

    # The partner reads it through the API (and the notifications feed) like any other move.
    response = shop.test.get(f"/v1/orders/{order.order_id}")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["status"] == S.TICKET_RECEIVED
    if "transfer" in data:
        assert data["transfer"]["state"] == TS.DETECTED and data["transfer"]["source"] == "email"
        assert data["transfer"]["quantity_detected"] == 2
    feed = shop.test.get("/v1/notifications", {"order_id": order.order_id}).json()["data"]["results"]
    assert {n["type"] for n in feed} >= {NT.ORDER_STATUS_CHANGED, NT.ORDER_TRANSFER_UPDATED}
    # Nothing of the evidence leaks to the partner.
    assert "accept.sandbox.invalid" not in response.content.decode()
