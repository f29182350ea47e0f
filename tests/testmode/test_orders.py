"""Test-mode orders: no real quantity, sandbox charge, [TEST] e-mail to the partner, no payout, and the
advance endpoint that walks an order through its life cycle (docs/partners/test-mode.md "Test mode")."""

import pytest
from django.core import mail
from standardwebhooks.webhooks import Webhook

from catalog.models import Row
from orders.models import Notification, Order
from payouts.models import Charge, Payout
from payouts.sandbox.models import SandboxCharge
from payouts.services.progression import payouts_progress
from tests.conftest import assert_error

from .conftest import api_order

PATH_TO_PAID = ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled", "paid"]


def advance(client, order_id: str, to: str):
    return client.post(f"/v1/test/orders/{order_id}/advance", {"to": to}, format="json")


def test_a_test_order_leaves_the_rows_quantity_unchanged(
    test_client, row, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row, quantity=3)
    row.refresh_from_db()
    assert row.available_quantity == 10
    # Canceling (or expiring) never gives back what was never taken.
    with django_capture_on_commit_callbacks(execute=True):
        assert test_client.post(f"/v1/orders/{order['order_id']}/cancel").status_code == 200
    assert Row.objects.get(pk=row.pk).available_quantity == 10


def test_a_test_order_still_refuses_more_than_the_row_has(test_client, row):
    from .conftest import api_quote, order_form

    quote = api_quote(test_client, row, quantity=4)
    Row.objects.filter(pk=row.pk).update(available_quantity=3)
    response = test_client.post("/v1/orders", order_form(quote, row), format="multipart")
    assert_error(response, 422, "INSUFFICIENT_QUANTITY")


def test_live_orders_still_take_quantity(live_client, row, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        api_order(live_client, row, quantity=3)
    row.refresh_from_db()
    assert row.available_quantity == 7


def test_test_confirmation_charges_the_sandbox_and_mails_the_partner_with_test_subject(
    test_client, partner, row, settings, django_capture_on_commit_callbacks
):
    settings.PAYMENT_PLATFORM = "sandbox"
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row, seller_email="seller@example.com")
    stored = Order.objects.get(order_id=order["order_id"])
    assert stored.status == "awaiting_transfer"
    assert SandboxCharge.objects.filter(
        idempotency_key=f"test:{order['order_id']}", status="succeeded"
    ).exists()
    assert not Charge.objects.filter(order=stored).exists()  # no money figure ever counts it
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [partner.contact_email]
    assert message.subject.startswith("[TEST] ")
    assert "seller@example.com" not in message.to


def test_advance_to_paid_emits_every_step_and_webhooks_to_the_test_endpoint_only(
    test_client, live_client, partner, row, receiver, django_capture_on_commit_callbacks
):
    test_endpoint = test_client.post(
        "/v1/webhook_endpoints", {"url": receiver.url("/test"), "event_types": ["*"]}, format="json"
    ).json()["data"]
    live_endpoint = live_client.post(
        "/v1/webhook_endpoints", {"url": receiver.url("/live"), "event_types": ["*"]}, format="json"
    ).json()["data"]
    assert test_endpoint["livemode"] is False and live_endpoint["livemode"] is True

    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row)
    with django_capture_on_commit_callbacks(execute=True):
        response = advance(test_client, order["order_id"], "paid")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["status"] == "paid" and data["livemode"] is False
    assert [h["to_status"] for h in data["status_history"]] == ["accepted", *PATH_TO_PAID]
    # The same shape as GET /v1/orders/{id}.
    assert data == test_client.get(f"/v1/orders/{order['order_id']}").json()["data"]

    feed = test_client.get("/v1/notifications", {"order_id": order["order_id"]}).json()["data"]["results"]
    steps = [
        (n["type"], n["data"]["previous_transfer_state"], n["data"]["order"]["transfer"]["state"])
        if n["type"] == "order.transfer_updated"
        else (n["type"], n["data"]["previous_status"], n["data"]["order"]["status"])
        for n in feed
    ]
    assert steps == [
        ("order.created", None, "accepted"),
        ("order.status_changed", "accepted", "awaiting_transfer"),
        ("order.transfer_updated", "none", "detected"),
        ("order.status_changed", "awaiting_transfer", "ticket_received"),
        ("order.transfer_updated", "detected", "accepted"),  # recorded before the payout starts
        ("order.status_changed", "ticket_received", "payout_in_process"),
        ("order.status_changed", "payout_in_process", "scheduled"),
        ("order.status_changed", "scheduled", "paid"),
    ]
    assert all(n["livemode"] is False for n in feed)

    verifier = Webhook(test_endpoint["secret"])
    delivered = [verifier.verify(r.body, r.headers) for r in receiver.requests if r.path == "/test"]
    assert sorted(d["id"] for d in delivered) == sorted(n["id"] for n in feed)
    assert not [r for r in receiver.requests if r.path == "/live"]  # live endpoints get no test notifications
    # And no money moved: no payout row, and the payout beat leaves test orders alone.
    payouts_progress()
    assert not Payout.objects.filter(order__order_id=order["order_id"]).exists()


def test_advance_from_accepted_runs_the_confirmation_itself(test_client, partner, row):
    mail.outbox.clear()
    order = api_order(test_client, row)  # no commit callbacks run: the worker never confirmed it
    assert Order.objects.get(order_id=order["order_id"]).status == "accepted"
    response = advance(test_client, order["order_id"], "ticket_received")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["status"] == "ticket_received"
    assert SandboxCharge.objects.filter(idempotency_key=f"test:{order['order_id']}").exists()
    assert [m.subject[:7] for m in mail.outbox] == ["[TEST] "]
    assert mail.outbox[0].to == [partner.contact_email]


@pytest.mark.parametrize(
    "steps,target",
    [
        (["canceled"], "paid"),  # paid from canceled
        (["ticket_received"], "ticket_received"),  # the status it already has
        (["scheduled"], "ticket_received"),  # behind
        (["ticket_received"], "expired"),  # expiry only while awaiting the transfer
        (["paid"], "canceled"),
    ],
)
def test_illegal_advance_is_409_illegal_transition(
    test_client, row, steps, target, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row)
    for step in steps:
        assert advance(test_client, order["order_id"], step).status_code == 200
    error = assert_error(advance(test_client, order["order_id"], target), 409, "ILLEGAL_TRANSITION")
    assert error["details"]["to"] == target


@pytest.mark.parametrize(
    "target,reason", [("expired", "in_hand_date_passed"), ("canceled", "canceled_by_partner")]
)
def test_advance_to_a_side_exit_carries_its_reason(
    test_client, row, target, reason, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row)
    assert advance(test_client, order["order_id"], target).json()["data"]["status"] == target
    last = Notification.objects.filter(order__order_id=order["order_id"]).order_by("-id").first()
    assert last.payload["data"]["reason"] == reason


def test_advance_with_a_live_token_is_403_test_mode_only(
    live_client, row, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(live_client, row)
    assert_error(advance(live_client, order["order_id"], "paid"), 403, "TEST_MODE_ONLY")
    assert Order.objects.get(order_id=order["order_id"]).status == "awaiting_transfer"


def test_advance_of_an_unknown_or_live_order_is_404(test_client, live_client, row):
    live_order = api_order(live_client, row)
    assert_error(advance(test_client, live_order["order_id"], "paid"), 404, "ORDER_NOT_FOUND")
    assert_error(advance(test_client, "ord_doesnotexist", "paid"), 404, "ORDER_NOT_FOUND")


@pytest.mark.parametrize("body", [{"to": "accepted"}, {"to": "delivered"}, {}, {"to": None}])
def test_advance_with_a_bad_target_is_400(test_client, row, body):
    order = api_order(test_client, row)
    response = test_client.post(f"/v1/test/orders/{order['order_id']}/advance", body, format="json")
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "to"


def test_advance_is_idempotent_with_an_idempotency_key(test_client, row, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row)
    headers = {"HTTP_IDEMPOTENCY_KEY": "advance-1"}
    first = test_client.post(
        f"/v1/test/orders/{order['order_id']}/advance", {"to": "ticket_received"}, format="json", **headers
    )
    again = test_client.post(
        f"/v1/test/orders/{order['order_id']}/advance", {"to": "ticket_received"}, format="json", **headers
    )
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
    # Created, awaiting_transfer, the transfer detected, ticket_received: each once.
    types = Notification.objects.filter(order__order_id=order["order_id"]).values_list("type", flat=True)
    assert sorted(types) == sorted(
        ["order.created", "order.status_changed", "order.transfer_updated", "order.status_changed"]
    )


def test_decline_test_seller_email_cancels_with_card_declined(
    test_client, row, django_capture_on_commit_callbacks
):
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row, seller_email="someone@decline.test")
    assert Order.objects.get(order_id=order["order_id"]).status == "canceled"
    feed = test_client.get("/v1/notifications", {"order_id": order["order_id"]}).json()["data"]["results"]
    changed = [n for n in feed if n["type"] == "order.status_changed"]
    assert [
        (n["data"]["previous_status"], n["data"]["order"]["status"], n["data"]["reason"]) for n in changed
    ] == [("accepted", "canceled", "card_declined")]
    assert mail.outbox == []  # nobody is asked to transfer tickets of a declined order
    assert not Charge.objects.exists()  # and no payment alert or refund can follow


def test_decline_test_through_advance_is_409_and_leaves_the_order_canceled(test_client, row):
    order = api_order(test_client, row, seller_email="Someone@Decline.Test")
    assert_error(advance(test_client, order["order_id"], "paid"), 409, "ILLEGAL_TRANSITION")
    assert Order.objects.get(order_id=order["order_id"]).status == "canceled"


def test_test_mode_needs_no_payment_methods(db, row):
    from .conftest import client_for, make_partner_with_both_pairs

    pairs = make_partner_with_both_pairs(name="Not Ready Yet", payment_methods=False)
    live = client_for(pairs.live)
    assert_error(
        live.post(
            "/v1/quotes",
            {"event_id": row.section.event.event_id, "section_name": row.section.name, "quantity": 1},
            format="json",
        ),
        403,
        "PAYOUT_METHOD_NOT_CONFIGURED",
    )
    order = api_order(client_for(pairs.test), row)
    assert advance(client_for(pairs.test), order["order_id"], "paid").json()["data"]["status"] == "paid"


def test_staff_dashboard_counts_live_orders_only(test_client, live_client, row):
    from datetime import timedelta

    from django.utils import timezone

    from payouts.backoffice.dashboard import _period

    api_order(test_client, row, quantity=3)
    api_order(live_client, row, quantity=1)
    now = timezone.now()
    figures = _period("today", now - timedelta(hours=1), now + timedelta(hours=1))
    assert (figures.orders, figures.tickets) == (1, 1)
