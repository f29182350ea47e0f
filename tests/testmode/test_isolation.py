"""A test-mode token never sees a live object and a live token never sees a test-mode one, on every endpoint
that returns quotes, orders, notifications or webhook endpoints (docs/partners/test-mode.md "Test mode")."""

import pytest

from orders.transfers.models import InboundMessage
from tests.conftest import assert_error

from .conftest import api_order, api_quote, order_form


@pytest.fixture
def both_worlds(live_client, test_client, row, django_capture_on_commit_callbacks):
    """One quote, one order (with its notifications) and one webhook endpoint in each mode."""
    world = {}
    for mode, client in (("live", live_client), ("test", test_client)):
        with django_capture_on_commit_callbacks(execute=True):
            order = api_order(client, row)
        quote = api_quote(client, row)
        endpoint = client.post(
            "/v1/webhook_endpoints",
            {"url": "http://127.0.0.1:9/" + mode, "event_types": ["*"]},
            format="json",
        )
        assert endpoint.status_code == 201, endpoint.content
        notifications = client.get("/v1/notifications").json()["data"]["results"]
        assert notifications, "each order writes its notifications"
        world[mode] = {
            "client": client,
            "order": order,
            "quote": quote,
            "endpoint": endpoint.json()["data"],
            "notification": notifications[0],
        }
    return world


@pytest.mark.parametrize("mine,other", [("live", "test"), ("test", "live")])
def test_each_mode_reads_only_its_own_objects(both_worlds, mine, other):
    client, own, foreign = both_worlds[mine]["client"], both_worlds[mine], both_worlds[other]
    livemode = mine == "live"

    # Quotes: GET of the own one works, the other mode's is QUOTE_NOT_FOUND.
    response = client.get(f"/v1/quotes/{own['quote']['quote_id']}")
    assert response.status_code == 200 and response.json()["data"]["livemode"] is livemode
    assert_error(client.get(f"/v1/quotes/{foreign['quote']['quote_id']}"), 404, "QUOTE_NOT_FOUND")

    # Orders: list and detail.
    listed = client.get("/v1/orders").json()["data"]["results"]
    assert [o["order_id"] for o in listed] == [own["order"]["order_id"]]
    assert all(o["livemode"] is livemode for o in listed)
    response = client.get(f"/v1/orders/{own['order']['order_id']}")
    assert response.status_code == 200 and response.json()["data"]["livemode"] is livemode
    assert_error(client.get(f"/v1/orders/{foreign['order']['order_id']}"), 404, "ORDER_NOT_FOUND")
    assert_error(client.post(f"/v1/orders/{foreign['order']['order_id']}/cancel"), 404, "ORDER_NOT_FOUND")

    # Notifications: list (also filtered by the other mode's order), detail, and `after`.
    feed = client.get("/v1/notifications").json()["data"]["results"]
    assert feed and {n["data"]["order"]["order_id"] for n in feed} == {own["order"]["order_id"]}
    assert all(n["livemode"] is livemode for n in feed)
    filtered = client.get("/v1/notifications", {"order_id": foreign["order"]["order_id"]})
    assert filtered.json()["data"]["results"] == []
    assert client.get(f"/v1/notifications/{own['notification']['id']}").json()["data"] == own["notification"]
    assert_error(
        client.get(f"/v1/notifications/{foreign['notification']['id']}"), 404, "NOTIFICATION_NOT_FOUND"
    )
    assert_error(
        client.get("/v1/notifications", {"after": foreign["notification"]["id"]}), 400, "VALIDATION_ERROR"
    )

    # Webhook endpoints: list, detail, change, ping, deliveries, resend of the other mode's notification.
    endpoints = client.get("/v1/webhook_endpoints").json()["data"]["results"]
    assert [e["endpoint_id"] for e in endpoints] == [own["endpoint"]["endpoint_id"]]
    assert endpoints[0]["livemode"] is livemode
    foreign_endpoint = foreign["endpoint"]["endpoint_id"]
    for response in (
        client.get(f"/v1/webhook_endpoints/{foreign_endpoint}"),
        client.patch(f"/v1/webhook_endpoints/{foreign_endpoint}", {"description": "x"}, format="json"),
        client.post(f"/v1/webhook_endpoints/{foreign_endpoint}/ping"),
        client.get(f"/v1/webhook_endpoints/{foreign_endpoint}/deliveries"),
        client.delete(f"/v1/webhook_endpoints/{foreign_endpoint}"),
    ):
        assert_error(response, 404, "WEBHOOK_ENDPOINT_NOT_FOUND")
    resend = client.post(
        f"/v1/webhook_endpoints/{own['endpoint']['endpoint_id']}/resend",
        {"notification_id": foreign["notification"]["id"]},
        format="json",
    )
    assert_error(resend, 404, "NOTIFICATION_NOT_FOUND")


@pytest.mark.parametrize("quote_mode,order_mode", [("live", "test"), ("test", "live")])
def test_ordering_with_a_quote_of_the_other_mode_is_quote_not_found(
    live_client, test_client, row, quote_mode, order_mode
):
    clients = {"live": live_client, "test": test_client}
    quote = api_quote(clients[quote_mode], row)
    response = clients[order_mode].post("/v1/orders", order_form(quote, row), format="multipart")
    assert_error(response, 404, "QUOTE_NOT_FOUND")
    # The quote is untouched: its own mode can still order it.
    assert (
        clients[quote_mode].post("/v1/orders", order_form(quote, row), format="multipart").status_code == 201
    )


def test_quotes_and_orders_carry_their_mode(live_client, test_client, row):
    assert api_quote(live_client, row)["livemode"] is True
    assert api_quote(test_client, row)["livemode"] is False
    assert api_order(live_client, row)["livemode"] is True
    assert api_order(test_client, row)["livemode"] is False


def test_another_partners_notification_and_test_order_are_not_found(
    test_client, row, django_capture_on_commit_callbacks
):
    from .conftest import client_for, make_partner_with_both_pairs

    other = client_for(make_partner_with_both_pairs(name="Other Resale Co").test)
    with django_capture_on_commit_callbacks(execute=True):
        order = api_order(test_client, row)
    notification = test_client.get("/v1/notifications").json()["data"]["results"][0]
    assert_error(other.get(f"/v1/notifications/{notification['id']}"), 404, "NOTIFICATION_NOT_FOUND")
    response = other.post(f"/v1/test/orders/{order['order_id']}/advance", {"to": "paid"}, format="json")
    assert_error(response, 404, "ORDER_NOT_FOUND")
    response = other.post(
        f"/v1/test/orders/{order['order_id']}/simulate_transfer", {"variant": "match"}, format="json"
    )
    assert_error(response, 404, "ORDER_NOT_FOUND")
    assert test_client.get(f"/v1/orders/{order['order_id']}").json()["data"]["status"] == "awaiting_transfer"
    assert not InboundMessage.objects.exists()
