"""The OpenAPI schema documents Idempotency-Key on every POST but the token endpoint."""

import json

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema():
    response = APIClient().get("/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return json.loads(response.content)


def _codes(response: dict) -> set[str]:
    examples = response.get("content", {}).get("application/json", {}).get("examples", {})
    return {e["value"]["error"]["code"] for e in examples.values()}


def test_every_post_but_the_token_endpoint_takes_the_header(schema):
    posts = {path: methods["post"] for path, methods in schema["paths"].items() if "post" in methods}
    assert {"/v1/quotes", "/v1/orders", "/v1/orders/{order_id}/cancel", "/v1/auth/token"} <= set(posts)
    for path, operation in posts.items():
        headers = [p for p in operation.get("parameters", []) if p["in"] == "header"]
        named = [p for p in headers if p["name"] == "Idempotency-Key"]
        if path == "/v1/auth/token":
            assert named == []
            assert all(
                "Idempotent-Replayed" not in r.get("headers", {}) for r in operation["responses"].values()
            )
            continue
        assert len(named) == 1, path
        assert named[0]["required"] is False
        assert named[0]["schema"]["maxLength"] == 255
        responses = operation["responses"]
        assert "IDEMPOTENCY_KEY_IN_USE" in _codes(responses["409"])
        assert "Retry-After" in responses["409"]["headers"]
        assert "IDEMPOTENCY_KEY_MISMATCH" in _codes(responses["422"])
        assert "VALIDATION_ERROR" in _codes(responses["400"])
        success = [s for s in responses if s.startswith("2")]
        for status in [*success, "403", "404", "409", "422"]:
            if status in responses:
                assert "Idempotent-Replayed" in responses[status]["headers"], (path, status)
        for status in ("400", "401", "429", "500"):
            assert "Idempotent-Replayed" not in responses[status].get("headers", {}), (path, status)


def test_get_operations_do_not_take_the_header(schema):
    for path, methods in schema["paths"].items():
        if "get" in methods:
            names = [p["name"] for p in methods["get"].get("parameters", [])]
            assert "Idempotency-Key" not in names, path
