"""``order.transfer_updated`` reaches the webhook endpoints subscribed to it, and those of ``"*"``, signed as
every delivery (docs/partners/notifications-and-webhooks.md "Webhooks")."""

from __future__ import annotations

import pytest
from standardwebhooks.webhooks import Webhook

from orders.transfers.decision import state
from orders.webhooks.models import WebhookEndpoint
from tests.conftest import assert_error
from tests.portal.fixtures import portal_login

from .conftest import awaiting_order

pytestmark = pytest.mark.django_db


def _register(client, url: str, event_types: list[str]) -> str:
    response = client.post("/v1/webhook_endpoints", {"url": url, "event_types": event_types}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["data"]["event_types"] == event_types
    return response.json()["data"]["secret"]


def test_subscribers_of_the_type_and_of_every_type_get_it_the_others_do_not(
    auth_client,
    partner,
    receiver,
    django_capture_on_commit_callbacks,
):
    secrets = {
        "/transfer": _register(auth_client, receiver.url("/transfer"), ["order.transfer_updated"]),
        "/all": _register(auth_client, receiver.url("/all"), ["*"]),
        "/status": _register(auth_client, receiver.url("/status"), ["order.status_changed"]),
    }
    order = awaiting_order(partner)
    with django_capture_on_commit_callbacks(execute=True):
        state.order_receive(order=order, source="email", actor="system:transfers", reason="Matched")

    got: dict[str, list[tuple]] = {path: [] for path in secrets}
    for request in receiver.requests:
        body = Webhook(secrets[request.path]).verify(request.body, request.headers)
        got[request.path].append(
            (body["type"], body["data"].get("previous_transfer_state"), body["data"]["reason"])
        )
    assert got["/transfer"] == [("order.transfer_updated", "none", "transfer_detected")]
    assert sorted(got["/all"]) == [
        ("order.status_changed", None, "transfer_detected"),
        ("order.transfer_updated", "none", "transfer_detected"),
    ]
    assert got["/status"] == [("order.status_changed", None, "transfer_detected")]


def test_the_type_is_subscribable_but_not_beside_the_wildcard(auth_client):
    response = auth_client.post(
        "/v1/webhook_endpoints",
        {"url": "https://hooks.example.com/x", "event_types": ["order.transfer_updated", "*"]},
        format="json",
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    response = auth_client.post(
        "/v1/webhook_endpoints",
        {"url": "https://hooks.example.com/x", "event_types": ["order.transfer"]},
        format="json",
    )
    assert_error(response, 400, "VALIDATION_ERROR")


def test_the_portals_webhook_form_offers_the_type(receiver):
    login = portal_login(name="Gate Co", email="gate@gate.example", payment_methods=True)
    form = login.client.get("/portal/settings/webhooks/").content.decode()
    assert 'value="order.transfer_updated"' in form
    response = login.client.post(
        "/portal/settings/webhooks/add", {"url": receiver.url(), "event_types": ["order.transfer_updated"]}
    )
    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get(partner=login.partner)
    assert endpoint.event_types == ["order.transfer_updated"]
    assert endpoint.subscribes_to("order.transfer_updated") and not endpoint.subscribes_to(
        "order.status_changed"
    )
