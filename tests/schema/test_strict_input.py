"""Strict input through the real door (docs/partners/conventions.md "Strict input"): a present JSON body is an
object, a JSON field keeps its type, an empty query value is an error, arrays stop at their maximum; and the
published schema says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from orders.models import Order
from orders.webhooks.models import WebhookEndpoint
from tests.schema.fuzzing import World, build_world

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/partners/openapi.json").read_text())


@pytest.fixture
def world(db) -> World:
    return build_world()


@pytest.fixture
def client(world) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.token}")
    return client


def _refused(response, field: str, issue: str | None = None) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR", error
    assert error["details"]["field"] == field, error
    if issue:
        assert error["details"]["issue"] == issue, error


EVENT_PARAMS = [
    "q", "venue_id", "venue_name", "city", "performer_id", "performer_name", "primary_site", "date_from",
    "date_to", "cursor", "limit",
]  # fmt: skip


@pytest.mark.parametrize("param", EVENT_PARAMS)
def test_an_empty_event_filter_is_refused_not_read_as_absent(client, param):
    _refused(client.get(f"/v1/events?{param}="), param, "invalid")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/events/{event_id}/sections",
        "/v1/events/{event_id}/sections/Lower%20101/rows",
        "/v1/webhook_endpoints",
        "/v1/webhook_endpoints/{endpoint_id}/deliveries",
        "/v1/orders",
        "/v1/notifications",
    ],
)
@pytest.mark.parametrize("param", ["cursor", "limit"])
def test_every_list_refuses_an_empty_page_parameter(client, world, path, param):
    url = path.format(event_id=world.event_id, endpoint_id=world.endpoint_id)
    assert client.get(url).status_code == 200
    _refused(client.get(f"{url}?{param}="), param, "invalid")


def test_a_json_number_is_not_taken_as_text_nor_text_as_a_number(client, world):
    endpoint = f"/v1/webhook_endpoints/{world.endpoint_id}"
    _refused(client.patch(endpoint, {"description": 0}, format="json"), "description", "invalid_type")
    assert WebhookEndpoint.objects.get(endpoint_id=world.endpoint_id).description == "fuzz"
    body = {"event_id": world.event_id, "section_name": "Lower 101", "row_name": "A", "quantity": "1"}
    _refused(client.post("/v1/quotes", body, format="json"), "quantity", "invalid_type")
    _refused(
        client.post("/v1/quotes", {**body, "quantity": 1, "user_metadata": {"email": 5}}, format="json"),
        "user_metadata.email",
        "invalid_type",
    )
    _refused(client.post("/v1/quotes", {**body, "quantity": True}, format="json"), "quantity", "invalid_type")
    assert client.post("/v1/quotes", {**body, "quantity": 1}, format="json").status_code == 201


def test_event_types_past_the_maximum_are_refused_even_when_they_repeat(client, world):
    endpoint = f"/v1/webhook_endpoints/{world.endpoint_id}"
    eleven = ["order.created"] * 11
    _refused(client.patch(endpoint, {"event_types": eleven}, format="json"), "event_types", "too_long")
    response = client.patch(endpoint, {"event_types": eleven[:10]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["event_types"] == ["order.created"]  # folded, as the schema says


@pytest.mark.parametrize("raw", ["null", "false", "0", '""', "[]", "5", '"x"'])
def test_a_present_json_body_that_is_not_an_object_is_refused(client, world, raw):
    cancel = client.post(f"/v1/orders/{world.order_id}/cancel", raw, content_type="application/json")
    _refused(cancel, "body", "invalid_type")
    assert Order.objects.get(order_id=world.order_id).status != Order.Status.CANCELED
    secret_before = WebhookEndpoint.objects.get(endpoint_id=world.endpoint_id).secret_encrypted
    rotate = client.post(
        f"/v1/webhook_endpoints/{world.endpoint_id}/rotate_secret", raw, content_type="application/json"
    )
    _refused(rotate, "body", "invalid_type")
    assert WebhookEndpoint.objects.get(endpoint_id=world.endpoint_id).secret_encrypted == secret_before
    # No body at all is still no body.
    assert client.post(f"/v1/orders/{world.order_id}/cancel").status_code == 200


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "http://user:pw@example.com/", " http://127.0.0.1:9/x", "http://127.0.0.1:9/x\n"],
)
def test_a_webhook_url_is_judged_as_sent(client, world, url):
    _refused(client.patch(f"/v1/webhook_endpoints/{world.endpoint_id}", {"url": url}, format="json"), "url")


def test_the_schema_states_the_rules_it_can():
    schemas = SCHEMA["components"]["schemas"]
    grant = schemas["ClientCredentialsRequest"]["properties"]["grant_type"]
    assert schemas[grant["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"] == ["client_credentials"]
    url = schemas["EndpointCreateRequest"]["properties"]["url"]
    assert url["format"] == "uri" and url["pattern"].startswith("^[Hh][Tt][Tt][Pp][Ss]?://")
    event_types = schemas["PatchedEndpointUpdateRequest"]["properties"]["event_types"]
    assert all(choice["maxItems"] <= 10 for choice in event_types["oneOf"])
    assert "duplicates are folded" in event_types["description"]
    rules = SCHEMA["paths"]["/v1/orders"]["post"]["x-rules"]
    assert any("in_hand_date" in r for r in rules) and any("%PDF-" in r for r in rules)
    conditional = SCHEMA["components"]["schemas"]["OrderCreateRequest"]["allOf"]
    assert [rule["anyOf"][1]["required"] for rule in conditional] == [["in_hand_date"], ["file"]]
    assert any("date_from" in r for r in SCHEMA["paths"]["/v1/events"]["get"]["x-rules"])
