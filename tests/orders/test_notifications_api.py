"""GET /v1/notifications (the feed) and GET /v1/orders?updated_from= (docs/partners/notifications-and-webhooks.md "Notifications")."""

from datetime import timedelta

import pytest
from django.utils import timezone

from orders.models import Notification, Order
from orders.services import order_cancel, order_transition
from tests.conftest import assert_error

from .conftest import create_order, narrow_token_client

pytestmark = pytest.mark.django_db


def feed(client, **params):
    response = client.get("/v1/notifications", params)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_the_feed_lists_the_callers_notifications_oldest_first_in_the_list_shape(auth_client, partner):
    order = create_order(partner)
    order_cancel(order=order, actor="partner:test", reason="Changed my mind")
    data = feed(auth_client)
    assert set(data) == {"results", "has_more", "next_cursor"}
    assert data["has_more"] is False and data["next_cursor"] is None
    stored = list(Notification.objects.filter(order=order).order_by("id"))
    assert data["results"] == [n.payload for n in stored]
    first, second = data["results"]
    assert set(first) == {"id", "type", "created_at", "livemode", "data"}
    assert (first["type"], second["type"]) == ("order.created", "order.status_changed")
    assert (
        second["data"]["previous_status"] == "accepted" and second["data"]["reason"] == "canceled_by_partner"
    )
    assert second["data"]["order"] == auth_client.get(f"/v1/orders/{order.order_id}").json()["data"]


def test_a_feed_walk_with_after_sees_every_notification_once_while_more_arrive(auth_client, partner):
    orders = [create_order(partner) for _ in range(3)]
    seen, after = [], None
    for round_ in range(6):
        params = {"limit": 2, **({"after": after} if after else {})}
        data = feed(auth_client, **params)
        # A poller resumes after the last id it saw; cursors page within one poll.
        while True:
            seen.extend(n["id"] for n in data["results"])
            if not data["has_more"]:
                break
            data = feed(auth_client, **params, cursor=data["next_cursor"])
        after = seen[-1] if seen else None
        if round_ < 3:  # changes keep coming between polls
            order_transition(order=orders[round_], to="awaiting_transfer", actor="staff:test")
    expected = list(
        Notification.objects.filter(partner=partner).order_by("id").values_list("notification_id", flat=True)
    )
    assert len(expected) == 6
    assert seen == expected


def test_another_partners_notifications_are_never_visible(auth_client, other_auth_client, partner):
    order = create_order(partner)
    assert feed(other_auth_client)["results"] == []
    assert feed(other_auth_client, order_id=order.order_id)["results"] == []
    mine = Notification.objects.get(order=order)
    error = assert_error(
        other_auth_client.get("/v1/notifications", {"after": mine.notification_id}), 400, "VALIDATION_ERROR"
    )
    assert error["details"] == {"field": "after", "issue": "invalid"}
    assert len(feed(auth_client)["results"]) == 1


def test_filters_by_type_and_order(auth_client, partner):
    first = create_order(partner)
    second = create_order(partner)
    order_cancel(order=second, actor="partner:test")
    assert [n["type"] for n in feed(auth_client, type="order.status_changed")["results"]] == [
        "order.status_changed"
    ]
    assert {n["data"]["order"]["order_id"] for n in feed(auth_client, type="order.created")["results"]} == {
        first.order_id,
        second.order_id,
    }
    assert [n["type"] for n in feed(auth_client, order_id=second.order_id)["results"]] == [
        "order.created",
        "order.status_changed",
    ]


@pytest.mark.parametrize(
    "params,field",
    [
        ({"after": "ntf_doesnotexist"}, "after"),
        ({"type": "order.deleted"}, "type"),
        ({"type": ""}, "type"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "garbage"}, "cursor"),
    ],
)
def test_bad_feed_parameters_are_validation_errors(auth_client, partner, params, field):
    create_order(partner)
    error = assert_error(auth_client.get("/v1/notifications", params), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == field


def test_the_feed_needs_the_orders_write_scope(partner):
    create_order(partner)
    assert_error(narrow_token_client(partner, "events:read").get("/v1/notifications"), 403, "FORBIDDEN")
    assert narrow_token_client(partner, "orders:write").get("/v1/notifications").status_code == 200


def test_the_feed_needs_a_token(api_client):
    assert_error(api_client.get("/v1/notifications"), 401, "UNAUTHORIZED")


def test_orders_updated_from_filters_on_the_last_status_change(auth_client, partner):
    old = create_order(partner)
    moved = create_order(partner)
    Order.objects.filter(pk__in=[old.pk, moved.pk]).update(
        status_changed_at=timezone.now() - timedelta(days=2)
    )
    order_transition(order=moved, to="awaiting_transfer", actor="staff:test")
    since = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    results = auth_client.get("/v1/orders", {"updated_from": since}).json()["data"]["results"]
    assert [o["order_id"] for o in results] == [moved.order_id]
    with_offset = (
        (timezone.now() - timedelta(days=3)).astimezone(timezone.get_fixed_timezone(-300)).isoformat()
    )
    results = auth_client.get("/v1/orders", {"updated_from": with_offset}).json()["data"]["results"]
    assert {o["order_id"] for o in results} == {old.order_id, moved.order_id}
    exact = Order.objects.get(pk=moved.pk).status_changed_at.isoformat()
    assert [
        o["order_id"]
        for o in auth_client.get("/v1/orders", {"updated_from": exact}).json()["data"]["results"]
    ] == [moved.order_id]  # at or after: inclusive


@pytest.mark.parametrize("value", ["2021-11-21", "2021-11-21T10:00:00", "yesterday", ""])
def test_orders_updated_from_needs_a_datetime_with_a_zone(auth_client, value):
    error = assert_error(auth_client.get("/v1/orders", {"updated_from": value}), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "updated_from"
