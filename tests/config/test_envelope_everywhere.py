"""Every method on an unknown /v1/ path is the 404 envelope, and the schema lists every status an
operation answers (403 ACCOUNT_SUSPENDED on every authenticated operation, 413 on every body)."""

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from partners import services
from tests.conftest import assert_error


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("path", ["/v1/nope", "/v1/orders/ord_x/refund", "/v1"])
def test_every_method_on_an_unknown_api_path_is_the_404_envelope(db, method, path):
    client = Client(enforce_csrf_checks=True)  # what a browser-less partner meets: no CSRF cookie
    response = client.generic(method.upper(), path, data=b"{}", content_type="application/json")
    error = assert_error(response, 404, "NOT_FOUND")
    assert "csrf" not in error["message"].lower()
    assert response["Content-Type"].startswith("application/json")


def _schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def test_orders_reads_answer_account_suspended_and_their_schema_says_so(auth_client, partner):
    services.partner_suspend(partner=partner)
    assert_error(auth_client.get("/v1/orders"), 403, "ACCOUNT_SUSPENDED")
    assert_error(auth_client.get("/v1/orders/ord_anything"), 403, "ACCOUNT_SUSPENDED")
    paths = _schema()["paths"]
    for path in ("/v1/orders", "/v1/orders/{order_id}"):
        assert "ACCOUNT_SUSPENDED" in paths[path]["get"]["responses"]["403"]["description"], path


def test_every_authenticated_operation_documents_account_suspended_and_rate_limit_fields():
    schema = _schema()
    checked = 0
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            if operation.get("security") in ([], [{}]):
                continue
            checked += 1
            responses = operation["responses"]
            assert "ACCOUNT_SUSPENDED" in responses.get("403", {}).get("description", ""), (method, path)
            for name in ("RateLimit-Policy", "RateLimit", "RateLimit-Limit"):
                success = next(status for status in sorted(responses) if status.startswith("2"))
                assert name in responses[success]["headers"], (method, path)
            if "requestBody" in operation:
                assert "413" in responses, (method, path)
    assert checked >= 8
