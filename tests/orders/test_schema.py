"""The OpenAPI document describes every orders endpoint, the multipart body and the errors it can give."""

import pytest
from drf_spectacular.generators import SchemaGenerator


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def test_create_documents_the_multipart_form(schema):
    operation = schema["paths"]["/v1/orders"]["post"]
    content = operation["requestBody"]["content"]
    assert list(content) == ["multipart/form-data"]
    ref = content["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
    form = schema["components"]["schemas"][ref]
    assert form["properties"]["file"]["format"] == "binary"
    assert set(form["required"]) == {"quote_id", "delivery_type", "is_ready_to_deliver"}
    assert form["properties"]["is_ready_to_deliver"]["type"] == "boolean"
    assert "examples" in content["multipart/form-data"]


def test_create_lists_every_error_of_spec_4_2(schema):
    responses = schema["paths"]["/v1/orders"]["post"]["responses"]
    assert {"201", "400", "401", "403", "404", "422"} <= set(responses)
    described = " ".join(r["description"] for r in responses.values())
    for code in (
        "VALIDATION_ERROR",
        "IN_HAND_DATE_REQUIRED",
        "FILE_REQUIRED",
        "FORBIDDEN",
        "PAYOUT_METHOD_NOT_CONFIGURED",
        "QUOTE_NOT_FOUND",
        "QUOTE_EXPIRED",
        "QUOTE_ALREADY_CONSUMED",
        "INVALID_DELIVERY_DEADLINE",
        "EVENT_EXPIRED",
        "INSUFFICIENT_QUANTITY",
        "UNAUTHORIZED",
        "TOKEN_EXPIRED",
    ):
        assert code in described, code
    created = responses["201"]["content"]["application/json"]
    assert created["schema"]["properties"]["data"]
    assert "examples" in created


def test_read_and_cancel_endpoints_are_documented(schema):
    paths = schema["paths"]
    assert "get" in paths["/v1/orders"]
    assert "get" in paths["/v1/orders/{order_id}"]
    cancel = paths["/v1/orders/{order_id}/cancel"]["post"]
    assert (
        "409" in cancel["responses"] and "ORDER_NOT_CANCELABLE" in cancel["responses"]["409"]["description"]
    )
    assert "404" in paths["/v1/orders/{order_id}"]["get"]["responses"]
    params = {p["name"] for p in paths["/v1/orders"]["get"]["parameters"]}
    assert {"status", "event_id", "created_from", "created_to", "limit", "cursor"} <= params
