"""GET /v1/orders, GET /v1/orders/{order_id}, POST /v1/orders/{order_id}/cancel."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from catalog.models import Row
from orders.models import Order
from orders.services import order_transition
from tests.conftest import assert_error
from tests.orders.factories import order_row

from .conftest import create_order, narrow_token_client, order_form, post_order

pytestmark = pytest.mark.django_db


def test_detail_has_the_creation_shape_plus_status_changed_at_and_status_history(auth_client, quote):
    created = post_order(auth_client, order_form(quote, partner_reference="R-1")).json()["data"]
    response = auth_client.get(f"/v1/orders/{created['order_id']}")
    assert response.status_code == 200
    data = response.json()["data"]
    history = data.pop("status_history")
    # docs/partners/notifications-and-webhooks.md "Notifications": the order object carries status_changed_at, set at creation too.
    assert data.pop("status_changed_at") == created["created_at"]
    assert data == created
    assert history == [
        {
            "from_status": None,
            "to_status": "accepted",
            "at": created["created_at"],
            "actor": "partner",
            "reason": "Order created",
        }
    ]


def test_detail_of_another_partners_order_is_order_not_found(other_auth_client, partner):
    order = create_order(partner)
    assert_error(other_auth_client.get(f"/v1/orders/{order.order_id}"), 404, "ORDER_NOT_FOUND")


def test_detail_of_unknown_order_is_order_not_found(auth_client):
    assert_error(auth_client.get("/v1/orders/ord_doesnotexist0000000"), 404, "ORDER_NOT_FOUND")


def test_reading_needs_a_valid_token(api_client, partner):
    order = create_order(partner)
    assert_error(api_client.get(f"/v1/orders/{order.order_id}"), 401, "UNAUTHORIZED")
    assert_error(api_client.get("/v1/orders"), 401, "UNAUTHORIZED")


def test_reading_works_with_any_valid_token_of_the_owner(partner):
    order = create_order(partner)
    client = narrow_token_client(partner, "events:read")
    assert client.get(f"/v1/orders/{order.order_id}").status_code == 200
    assert client.get("/v1/orders").json()["data"]["results"][0]["order_id"] == order.order_id


def test_writing_needs_the_orders_write_scope(partner, quote):
    client = narrow_token_client(partner, "events:read quotes:write")
    error = assert_error(post_order(client, order_form(quote)), 403, "FORBIDDEN")
    assert error["details"] == {"required_scope": "orders:write"}
    order = create_order(partner)
    assert_error(client.post(f"/v1/orders/{order.order_id}/cancel"), 403, "FORBIDDEN")


def test_history_hides_staff_names(auth_client, partner):
    order = create_order(partner)
    order_transition(order=order, to="awaiting_transfer", actor="system:confirmation", reason="Card charged")
    order_transition(order=order, to="ticket_received", actor="staff:alice", reason="Ticket received")
    history = auth_client.get(f"/v1/orders/{order.order_id}").json()["data"]["status_history"]
    assert [h["actor"] for h in history] == ["partner", "system", "staff"]
    assert "alice" not in str(history)


# --- list -------------------------------------------------------------------------------------------------
def test_list_shows_only_the_callers_orders_newest_first(auth_client, partner, other_partner_creds):
    mine = []
    start = timezone.now()
    for i in range(3):
        with time_machine.travel(start + timedelta(minutes=i), tick=False):
            mine.append(create_order(partner))
    create_order(other_partner_creds.partner)

    data = auth_client.get("/v1/orders").json()["data"]
    assert [o["order_id"] for o in data["results"]] == [o.order_id for o in reversed(mine)]
    assert data["has_more"] is False and data["next_cursor"] is None


def test_list_items_have_the_order_shape(auth_client, quote):
    created = post_order(auth_client, order_form(quote)).json()["data"]
    assert auth_client.get("/v1/orders").json()["data"]["results"] == [created]


def test_list_paginates_with_a_stable_cursor(auth_client, partner):
    start = timezone.now()
    orders = []
    for i in range(5):
        with time_machine.travel(start + timedelta(seconds=i), tick=False):
            orders.append(create_order(partner))
    page1 = auth_client.get("/v1/orders", {"limit": 2}).json()["data"]
    assert page1["has_more"] is True
    # A new order arriving between pages does not shift the next page.
    with time_machine.travel(start + timedelta(minutes=5), tick=False):
        create_order(partner)
    page2 = auth_client.get("/v1/orders", {"limit": 2, "cursor": page1["next_cursor"]}).json()["data"]
    page3 = auth_client.get("/v1/orders", {"limit": 2, "cursor": page2["next_cursor"]}).json()["data"]
    seen = [o["order_id"] for o in page1["results"] + page2["results"] + page3["results"]]
    assert seen == [o.order_id for o in reversed(orders)]
    assert page3["has_more"] is False


def test_list_filters_by_status_event_and_creation_time(auth_client, partner):
    start = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    with time_machine.travel(start - timedelta(days=2), tick=False):
        old = create_order(partner)
    with time_machine.travel(start, tick=False):
        recent = create_order(partner)
        canceled = create_order(partner)
    order_transition(order=canceled, to="canceled", actor="partner:x")

    def ids(params):
        response = auth_client.get("/v1/orders", params)
        assert response.status_code == 200, response.content
        return {o["order_id"] for o in response.json()["data"]["results"]}

    assert ids({"status": "canceled"}) == {canceled.order_id}
    assert ids({"status": "accepted"}) == {old.order_id, recent.order_id}
    assert ids({"event_id": recent.event.event_id}) == {recent.order_id}
    day = start.date()
    assert ids({"created_from": day.isoformat()}) == {recent.order_id, canceled.order_id}
    assert ids({"created_to": (day - timedelta(days=1)).isoformat()}) == {old.order_id}
    assert ids({"created_to": (day - timedelta(days=2)).isoformat()}) == {old.order_id}
    exact = (start - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids({"created_from": exact, "created_to": exact}) == {old.order_id}
    assert ids({"created_from": exact.lower().replace("z", "+00:00")}) == {
        old.order_id,
        recent.order_id,
        canceled.order_id,
    }
    assert ids({"created_to": "9999-12-31", "created_from": "0001-01-01"}) == {
        old.order_id,
        recent.order_id,
        canceled.order_id,
    }


@pytest.mark.parametrize(
    "params,field",
    [
        ({"status": "shipped"}, "status"),
        ({"status": ""}, "status"),
        ({"event_id": ""}, "event_id"),
        ({"created_to": ""}, "created_to"),
        ({"created_from": "yesterday"}, "created_from"),
        ({"created_to": "2026-13-01"}, "created_to"),
        ({"created_from": "2021-01-01T10:00:00"}, "created_from"),  # no zone
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"cursor": "garbage!"}, "cursor"),
    ],
)
def test_list_rejects_bad_parameters(auth_client, params, field):
    error = assert_error(auth_client.get("/v1/orders", params), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == field


# --- cancel -----------------------------------------------------------------------------------------------
def test_cancel_an_accepted_order_gives_the_quantity_back(auth_client, partner):
    row = order_row(available_quantity=10)
    order = create_order(partner, row=row, quantity=4)
    assert Row.objects.get(pk=row.pk).available_quantity == 6

    response = auth_client.post(
        f"/v1/orders/{order.order_id}/cancel", {"reason": "Seller sold elsewhere"}, format="json"
    )

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["status"] == "canceled"
    assert data["status_history"][-1] == {
        "from_status": "accepted",
        "to_status": "canceled",
        "at": data["status_history"][-1]["at"],
        "actor": "partner",
        "reason": "Seller sold elsewhere",
    }
    assert Row.objects.get(pk=row.pk).available_quantity == 10


def test_cancel_an_awaiting_transfer_order(auth_client, partner):
    order = create_order(partner)
    order_transition(order=order, to="awaiting_transfer", actor="system:confirmation")
    response = auth_client.post(f"/v1/orders/{order.order_id}/cancel")
    assert response.status_code == 200
    assert response.json()["data"]["status"] == "canceled"


@pytest.mark.parametrize(
    "path",
    [
        ["canceled"],
        ["awaiting_transfer", "expired"],
        ["awaiting_transfer", "ticket_received"],
        ["awaiting_transfer", "ticket_received", "payout_in_process"],
        ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled"],
        ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled", "paid"],
    ],
)
def test_cancel_from_a_later_status_is_order_not_cancelable(auth_client, partner, path):
    row = order_row(available_quantity=10)
    order = create_order(partner, row=row)
    for status in path:
        order = order_transition(order=order, to=status, actor="staff:test")
    quantity_before = Row.objects.get(pk=row.pk).available_quantity

    error = assert_error(auth_client.post(f"/v1/orders/{order.order_id}/cancel"), 409, "ORDER_NOT_CANCELABLE")

    assert error["details"]["status"] == path[-1]
    assert Order.objects.get(pk=order.pk).status == path[-1]
    assert Row.objects.get(pk=row.pk).available_quantity == quantity_before


def test_cancel_another_partners_order_is_order_not_found(other_auth_client, partner):
    order = create_order(partner)
    assert_error(other_auth_client.post(f"/v1/orders/{order.order_id}/cancel"), 404, "ORDER_NOT_FOUND")
    assert Order.objects.get(pk=order.pk).status == "accepted"


def test_cancel_reason_too_long_is_validation_error(auth_client, partner):
    order = create_order(partner)
    response = auth_client.post(f"/v1/orders/{order.order_id}/cancel", {"reason": "x" * 256}, format="json")
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["field"] == "reason"


def test_orders_endpoints_reject_other_methods(auth_client, partner):
    order = create_order(partner)
    assert_error(auth_client.delete(f"/v1/orders/{order.order_id}"), 405, "METHOD_NOT_ALLOWED")
    assert_error(auth_client.get(f"/v1/orders/{order.order_id}/cancel"), 405, "METHOD_NOT_ALLOWED")
