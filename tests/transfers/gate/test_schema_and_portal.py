"""The OpenAPI schema says what the transfer looks like and which ``data`` goes with which notification
type; the portal's order pages show the transfer in words and nothing of the evidence."""

from __future__ import annotations

import pytest

from orders import outbox
from orders.transfers.decision import state
from orders.transfers.models import TransferCase
from tests.portal.fixtures import portal_login

from .conftest import received_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(api_client) -> dict:
    response = api_client.get("/v1/schema", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_the_order_schema_has_the_transfer_object(schema):
    components = schema["components"]["schemas"]
    assert "transfer" in components["Order"]["required"]
    ref = components["Order"]["properties"]["transfer"]
    name = (ref.get("$ref") or ref["allOf"][0]["$ref"]).rsplit("/", 1)[1]
    transfer = components[name]
    assert set(transfer["properties"]) == {
        "state",
        "quantity_detected",
        "source",
        "detected_at",
        "accepted_at",
    }
    assert transfer["properties"]["state"]["allOf"] == [{"$ref": "#/components/schemas/TransferStateEnum"}]
    assert components["TransferStateEnum"]["enum"] == [
        "none", "partial", "detected", "accepted", "mismatch", "recalled",
    ]  # fmt: skip
    assert transfer["properties"]["detected_at"]["format"] == "date-time"
    assert transfer["properties"]["accepted_at"]["nullable"] is True


def test_the_notification_data_is_one_of_a_shape_per_type(schema):
    components = schema["components"]["schemas"]
    data = components["Notification"]["properties"]["data"]
    name = (data.get("$ref") or data["allOf"][0]["$ref"]).rsplit("/", 1)[1]
    assert name == "NotificationDataByType"
    shapes = {s["$ref"].rsplit("/", 1)[1] for s in components[name]["oneOf"]}
    assert shapes == {"NotificationData", "TransferNotificationData", "PingData"}
    assert set(components["NotificationData"]["required"]) == {"order", "previous_status", "reason"}
    transfer = components["TransferNotificationData"]
    assert set(transfer["required"]) == {"order", "previous_transfer_state", "reason"}
    assert transfer["properties"]["reason"]["allOf"] == [{"$ref": "#/components/schemas/TransferReasonEnum"}]
    assert components["TransferReasonEnum"]["enum"] == list(outbox.TRANSFER_REASON_CODES)
    previous = transfer["properties"]["previous_transfer_state"]["allOf"]
    assert previous == [{"$ref": "#/components/schemas/TransferStateEnum"}]
    types = components[components["Notification"]["properties"]["type"]["$ref"].rsplit("/", 1)[1]]["enum"]
    assert "order.transfer_updated" in types


def test_the_status_reasons_of_the_transfer_are_in_the_reason_enum(schema):
    components = schema["components"]["schemas"]
    reason = components["NotificationData"]["properties"]["reason"]
    assert {"$ref": "#/components/schemas/StatusReasonEnum"} in reason["oneOf"]
    assert {"transfer_detected", "file_verified", "received_by_staff", "transfer_recalled"} <= set(
        components["StatusReasonEnum"]["enum"]
    )


def test_the_order_pages_show_the_transfer_in_words_and_no_evidence(db):
    login = portal_login(name="Gate Co", email="gate@gate.example", payment_methods=True)
    order = received_order(login.partner)
    state.case_open(order=order, kind=TransferCase.Kind.REPLAY_SUSPECTED, summary="SECRET-CASE-SUMMARY")

    page = login.client.get(f"/portal/orders/{order.order_id}").content.decode()
    assert "All 2 tickets arrived and match the order." in page
    assert "The payout starts once the tickets are accepted on the platform." in page
    assert "SECRET-CASE-SUMMARY" not in page
    listing = login.client.get("/portal/orders").content.decode()
    assert 'data-testid="order-transfer">Detected' in listing

    state.transfer_accept(
        order=order, actor="system:transfers", reason="Accepted", reason_code=outbox.REASON_TRANSFER_ACCEPTED
    )
    page = login.client.get(f"/portal/orders/{order.order_id}").content.decode()
    assert "The tickets were accepted on the ticketing platform." in page
    assert "The payout starts once" not in page
    feed = login.client.get("/portal/notifications", {"type": "order.transfer_updated"}).content.decode()
    assert "Transfer: detected → <strong>accepted</strong>" in feed
