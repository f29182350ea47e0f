"""A real order's whole life reaches the partner: a signed webhook for every change, verified with the
``standardwebhooks`` package as a receiver would, and the same notifications in the feed."""

import pytest
from standardwebhooks.webhooks import Webhook

from orders.transfers.decision.state import order_receive
from payouts.services.progression import payouts_progress
from tests.orders.conftest import create_order


def _feed(client) -> list[dict]:
    seen, after = [], None
    while True:
        response = client.get("/v1/notifications", {"limit": 2, **({"after": after} if after else {})})
        assert response.status_code == 200, response.content
        page = response.json()["data"]["results"]
        if not page:
            return seen
        seen.extend(page)
        after = page[-1]["id"]


@pytest.mark.django_db
def test_every_change_of_a_real_order_arrives_signed_and_matches_the_feed(
    auth_client, partner, receiver, settings, django_capture_on_commit_callbacks
):
    settings.SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS = 0
    settings.SANDBOX_PAYOUT_PAID_AFTER_SECONDS = 0
    registered = auth_client.post(
        "/v1/webhook_endpoints", {"url": receiver.url(), "event_types": ["*"]}, format="json"
    )
    assert registered.status_code == 201, registered.content
    secret = registered.json()["data"]["secret"]

    # Sold, confirmed (card charged), received, paid out: every step through the service's own paths.
    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    order.refresh_from_db()
    assert order.status == "awaiting_transfer"
    with django_capture_on_commit_callbacks(execute=True):
        # Staff record the tickets received and accepted on the platform: the payout may start.
        order_receive(
            order=order, source="staff", actor="staff:test", reason="Ticket received", accepted=True
        )
    for _ in range(4):
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
    order.refresh_from_db()
    assert order.status == "paid"
    # And one the partner cancels.
    with django_capture_on_commit_callbacks(execute=True):
        other = create_order(partner)
    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.post(f"/v1/orders/{other.order_id}/cancel").status_code == 200

    verifier = Webhook(secret)
    delivered = [verifier.verify(r.body, r.headers) for r in receiver.requests]
    changes = {
        (
            d["data"]["order"]["order_id"],
            d["type"],
            *(
                (d["data"]["previous_transfer_state"], d["data"]["order"]["transfer"]["state"])
                if d["type"] == "order.transfer_updated"
                else (d["data"]["previous_status"], d["data"]["order"]["status"])
            ),
        )
        for d in delivered
    }
    assert changes == {
        (order.order_id, "order.created", None, "accepted"),
        (order.order_id, "order.status_changed", "accepted", "awaiting_transfer"),
        (order.order_id, "order.transfer_updated", "none", "accepted"),
        (order.order_id, "order.status_changed", "awaiting_transfer", "ticket_received"),
        (order.order_id, "order.status_changed", "ticket_received", "payout_in_process"),
        (order.order_id, "order.status_changed", "payout_in_process", "scheduled"),
        (order.order_id, "order.status_changed", "scheduled", "paid"),
        (other.order_id, "order.created", None, "accepted"),
        (other.order_id, "order.status_changed", "accepted", "awaiting_transfer"),
        (other.order_id, "order.status_changed", "awaiting_transfer", "canceled"),
    }
    assert len(delivered) == len(changes)  # each change once
    canceled = next(d for d in delivered if d["data"]["order"]["status"] == "canceled")
    assert canceled["data"]["reason"] == "canceled_by_partner"
    # Every webhook-id is its notification's id, and the feed holds exactly those notifications.
    assert {r.headers["webhook-id"] for r in receiver.requests} == {d["id"] for d in delivered}
    feed = [n["id"] for n in _feed(auth_client)]
    assert len(feed) == len(set(feed)) == len(delivered)
    assert set(feed) == {d["id"] for d in delivered}
