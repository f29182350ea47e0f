"""The order's ``transfer`` as partners see it (docs/partners/orders.md "Transfer"): in the order object of
every answer, in ``order.transfer_updated`` on each change of its state, and never the evidence."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import time_machine

from orders import outbox
from orders.models import Notification, Order
from orders.transfers.decision import state
from orders.transfers.models import TransferCase

from .conftest import awaiting_order, received_order

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC)),
]

TS = Order.TransferState
NONE = {"state": "none", "quantity_detected": 0, "source": None, "detected_at": None, "accepted_at": None}
ARRIVED = datetime(2026, 11, 22, 10, 4, 12, 345678, tzinfo=UTC)
ACCEPTED = datetime(2026, 11, 22, 14, 30, 0, tzinfo=UTC)


def _order(client, order: Order) -> dict:
    response = client.get(f"/v1/orders/{order.order_id}")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def _transfer_feed(client, order: Order) -> list[dict]:
    response = client.get("/v1/notifications", {"order_id": order.order_id, "type": "order.transfer_updated"})
    assert response.status_code == 200, response.content
    return response.json()["data"]["results"]


def test_a_new_order_has_no_transfer_yet_in_get_list_and_cancel(auth_client, partner):
    order = awaiting_order(partner)

    assert _order(auth_client, order)["transfer"] == NONE
    listed = auth_client.get("/v1/orders").json()["data"]["results"]
    assert [o["transfer"] for o in listed if o["order_id"] == order.order_id] == [NONE]
    canceled = auth_client.post(f"/v1/orders/{order.order_id}/cancel")
    assert canceled.status_code == 200, canceled.content
    assert canceled.json()["data"]["transfer"] == NONE


def test_the_transfer_shows_detection_then_acceptance_with_the_orders_datetime_format(auth_client, partner):
    order = awaiting_order(partner)
    with time_machine.travel(ARRIVED, tick=False):
        order = state.order_receive(order=order, source="email", actor="system:transfers", reason="Matched")

    data = _order(auth_client, order)
    assert data["status"] == "ticket_received"
    assert data["transfer"] == {
        "state": "detected",
        "quantity_detected": 2,
        "source": "email",
        "detected_at": "2026-11-22T10:04:12Z",
        "accepted_at": None,
    }
    # The same format as the order's other datetimes.
    assert len(data["created_at"]) == len(data["transfer"]["detected_at"]) and data["created_at"].endswith(
        "Z"
    )

    with time_machine.travel(ACCEPTED, tick=False):
        state.transfer_accept(
            order=order,
            actor="system:transfers",
            reason="Accepted",
            reason_code=outbox.REASON_TRANSFER_ACCEPTED,
        )
    transfer = _order(auth_client, order)["transfer"]
    assert (transfer["state"], transfer["detected_at"], transfer["accepted_at"]) == (
        "accepted",
        "2026-11-22T10:04:12Z",
        "2026-11-22T14:30:00Z",
    )


def test_every_change_of_the_transfer_state_writes_order_transfer_updated(auth_client, partner):
    order = awaiting_order(partner)
    actor = "system:transfers"
    state.transfer_transition(
        order=order, to=TS.PARTIAL, actor=actor, reason_code=outbox.REASON_TRANSFER_PARTIAL,
        quantity_detected=1,
        source="email",
    )  # fmt: skip
    # The same state again only updates the count: no notification.
    state.transfer_transition(
        order=order,
        to=TS.PARTIAL,
        actor=actor,
        reason_code=outbox.REASON_TRANSFER_PARTIAL,
        quantity_detected=1,
    )
    order = state.order_receive(order=order, source="email", actor=actor, reason="The rest arrived")
    state.transfer_accept(
        order=order, actor=actor, reason="Accepted", reason_code=outbox.REASON_TRANSFER_ACCEPTED
    )
    state.order_recall(order=order, actor=actor, reason="The seller canceled the transfer")

    feed = _transfer_feed(auth_client, order)
    assert [
        (
            n["data"]["previous_transfer_state"],
            n["data"]["order"]["transfer"]["state"],
            n["data"]["order"]["transfer"]["quantity_detected"],
            n["data"]["reason"],
            n["data"]["order"]["status"],
        )
        for n in feed
    ] == [
        ("none", "partial", 1, "transfer_partial", "awaiting_transfer"),
        ("partial", "detected", 2, "transfer_detected", "awaiting_transfer"),
        ("detected", "accepted", 2, "transfer_accepted", "ticket_received"),
        ("accepted", "recalled", 0, "transfer_recalled", "ticket_received"),
    ]
    assert {tuple(sorted(n["data"])) for n in feed} == {("order", "previous_transfer_state", "reason")}
    assert all(n["type"] == "order.transfer_updated" and n["livemode"] is True for n in feed)
    # Each carries the order exactly as GET returned it then: status_history included.
    assert all(
        "status_history" in n["data"]["order"] and "status_changed_at" in n["data"]["order"] for n in feed
    )

    # The recall moved the order back, with its status reason.
    everything = auth_client.get("/v1/notifications", {"order_id": order.order_id}).json()["data"]["results"]
    moves = [
        (n["data"]["previous_status"], n["data"]["order"]["status"], n["data"]["reason"])
        for n in everything
        if n["type"] == "order.status_changed"
    ]
    assert moves[-2:] == [
        ("awaiting_transfer", "ticket_received", "transfer_detected"),
        ("ticket_received", "awaiting_transfer", "transfer_recalled"),
    ]
    assert _order(auth_client, order)["transfer"]["state"] == "recalled"
    # The feed's type filter: only the transfer's notifications.
    assert {n["type"] for n in _transfer_feed(auth_client, order)} == {"order.transfer_updated"}
    one = auth_client.get(f"/v1/notifications/{feed[0]['id']}")
    assert one.status_code == 200 and one.json()["data"] == feed[0]


@pytest.mark.parametrize(
    ("source", "reason"),
    [("email", "transfer_detected"), ("file", "file_verified"), ("staff", "received_by_staff")],
)
def test_the_status_reason_names_what_showed_the_tickets(auth_client, partner, source, reason):
    order = received_order(partner, source=source)
    feed = auth_client.get("/v1/notifications", {"order_id": order.order_id}).json()["data"]["results"]
    received = [
        n
        for n in feed
        if n["type"] == "order.status_changed" and n["data"]["order"]["status"] == "ticket_received"
    ]
    assert [n["data"]["reason"] for n in received] == [reason]
    assert _order(auth_client, order)["transfer"]["source"] == source


def test_partners_never_see_the_evidence_or_the_cases(auth_client, partner):
    order = received_order(partner)
    state.case_open(
        order=order, kind=TransferCase.Kind.REPLAY_SUSPECTED, summary="Seen before at accept link X"
    )
    data = _order(auth_client, order)
    assert set(data["transfer"]) == {"state", "quantity_detected", "source", "detected_at", "accepted_at"}
    text = json.dumps(data) + json.dumps(auth_client.get("/v1/notifications").json())
    for secret in ("case", "accept link", "evidence", "barcode", "verdict", "inbound"):
        assert secret not in text.lower()


def test_the_feed_filters_by_the_new_type_and_rejects_unknown_ones(auth_client, partner):
    received_order(partner)
    rows = auth_client.get("/v1/notifications", {"type": "order.transfer_updated"}).json()["data"]["results"]
    assert [n["type"] for n in rows] == ["order.transfer_updated"]
    assert auth_client.get("/v1/notifications", {"type": "order.transfer"}).status_code == 400
    assert Notification.objects.filter(type="order.transfer_updated").count() == 1
