"""Oversized, malformed and abusive requests get an error in the envelope: never a 500, never HTML."""

import json

import pytest
from django.conf import settings

from tests.conftest import assert_error

from .conftest import ORDER_FORM, quote_body

MB = 1024 * 1024


def _details(error: dict) -> tuple[str, str]:
    return error["details"]["field"], error["details"]["issue"]


# --- bodies ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/quotes", "/v1/auth/token"])
def test_json_body_over_the_limit_is_413(auth_client, path):
    body = json.dumps({"event_id": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    assert_error(
        auth_client.generic("POST", path, body, content_type="application/json"), 413, "PAYLOAD_TOO_LARGE"
    )


def test_body_size_is_checked_before_authentication(api_client, db):
    body = "[" + "0," * MB + "0]"
    assert_error(
        api_client.generic("POST", "/v1/quotes", body, content_type="application/json"),
        413,
        "PAYLOAD_TOO_LARGE",
    )


@pytest.mark.parametrize("path", ["/v1/quotes", "/v1/auth/token"])
def test_deeply_nested_json_is_400_not_500(auth_client, path):
    body = "[" * 100_000 + "]" * 100_000  # 200 kB, far below the size limit
    error = assert_error(
        auth_client.generic("POST", path, body, content_type="application/json"), 400, "VALIDATION_ERROR"
    )
    assert _details(error) == ("body", "too_deep")


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b'{"event_id": "\xff\xfe"}', "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (b"null", "application/json"),
        (b'"just a string"', "application/json"),
        (b"event_id=evt_1&quantity=1", "text/plain"),
        (b"<quote/>", "application/xml"),
        (b'{"quantity": 1e999999}', "application/json"),
    ],
)
def test_malformed_quote_bodies_are_validation_errors(auth_client, row, body, content_type):
    response = auth_client.generic("POST", "/v1/quotes", body, content_type=content_type)
    assert_error(response, 400, "VALIDATION_ERROR")


def test_wrong_types_in_json_are_named_field_by_field(auth_client, row):
    body = quote_body(row, event_id={"$gt": ""}, quantity=1e308, section_name=["Lower 101"])
    error = assert_error(auth_client.post("/v1/quotes", body, format="json"), 400, "VALIDATION_ERROR")
    assert {e["field"] for e in error["details"]["errors"]} >= {"event_id", "quantity", "section_name"}


def test_multipart_text_field_over_the_limit_is_413(auth_client, row):
    form = {
        "quote_id": "qte_x",
        **ORDER_FORM,
        "partner_reference": "r" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
    }
    assert_error(auth_client.post("/v1/orders", form, format="multipart"), 413, "PAYLOAD_TOO_LARGE")


def test_too_many_fields_is_400(auth_client, row):
    form = {f"field{i}": "1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 10)}
    error = assert_error(auth_client.post("/v1/orders", form, format="multipart"), 400, "VALIDATION_ERROR")
    assert _details(error) == ("body", "too_many_fields")
    query = "&".join(f"q{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 10))
    error = assert_error(auth_client.get(f"/v1/events?{query}"), 400, "VALIDATION_ERROR")
    assert _details(error) == ("query", "too_many_fields")


def test_json_sent_to_the_multipart_endpoint_is_a_clear_400(auth_client, row):
    response = auth_client.post("/v1/orders", {"quote_id": "qte_x", **ORDER_FORM}, format="json")
    assert_error(response, 400, "VALIDATION_ERROR")


# --- query strings and paths ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "limit=1e309",
        "limit=-1",
        "limit=0",
        "limit=101",
        "limit=%00",
        "cursor=" + "A" * 5000,
        "date_from=2026-02-30",
        "date_from=%00",
        "cursor=%FF%FE",
    ],  # fmt: skip
)
def test_abusive_query_values_are_validation_errors(auth_client, row, query):
    assert_error(auth_client.get(f"/v1/events?{query}"), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/events/%00",
        "/v1/orders/%00",
        "/v1/events/evt_%00/sections",
        "/v1/events/" + "e" * 5000,
        "/v1/orders/" + "o" * 5000,
        "/v1/../admin/",
        "/v1/events/%2e%2e%2f%2e%2e%2fadmin",
    ],  # fmt: skip
)
def test_abusive_paths_are_enveloped_404s(auth_client, row, path):
    response = auth_client.get(path)
    assert response.status_code == 404, (path, response.status_code, response.content[:200])
    assert response.json()["success"] is False


def test_unknown_methods_are_405_with_allow(auth_client):
    for method in ("PROPFIND", "TRACE", "DELETE", "PATCH"):
        response = auth_client.generic(method, "/v1/events")
        assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert "GET" in response["Allow"]


# --- headers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer " + "a" * 20_000,
        "Bearer",
        "Bearer  ",
        "Basic dXNlcjpwYXNz",
        "bearer x.y.z",
        "Bearer a.b.c.d",
        "Bearer \x00\x01",
        "Bearer é.é",
        "Token abc",
        "Bearer " + "." * 500,
    ],  # fmt: skip
)
def test_abusive_authorization_headers_are_401(api_client, db, authorization):
    response = api_client.get("/v1/events", HTTP_AUTHORIZATION=authorization)
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("request_id", ["x" * 129, "line\nbreak", "tab\there", "", "   ", "é" * 10])
def test_unusable_request_ids_are_replaced(api_client, db, request_id):
    response = api_client.get("/v1/nope", HTTP_X_REQUEST_ID=request_id)
    error = assert_error(response, 404, "NOT_FOUND")
    assert error
    assert response["X-Request-ID"].startswith("req_") and len(response["X-Request-ID"]) == 28
    assert response.json()["meta"]["request_id"] == response["X-Request-ID"]


def test_a_printable_request_id_is_honoured_not_injected(api_client, db):
    response = api_client.get("/v1/nope", HTTP_X_REQUEST_ID="partner-trace-42")
    assert response["X-Request-ID"] == "partner-trace-42"
    assert response.json()["meta"]["request_id"] == "partner-trace-42"


def test_a_host_outside_allowed_hosts_is_an_enveloped_400(auth_client):
    response = auth_client.get("/v1/events", HTTP_HOST="evil.example")
    assert_error(response, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "*/*;q=0", "garbage///", "image/png"])
def test_any_accept_header_gets_the_json_envelope(auth_client, row, accept):
    response = auth_client.get("/v1/events", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["success"] is True


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-16",
        "multipart/form-data",
        "multipart/form-data; boundary=",
        "application/x-www-form-urlencoded",
    ],  # fmt: skip
)
def test_abusive_content_types_are_4xx_envelopes(auth_client, row, content_type):
    response = auth_client.generic(
        "POST", "/v1/quotes", json.dumps(quote_body(row)), content_type=content_type
    )
    assert 400 <= response.status_code < 500, (content_type, response.status_code, response.content[:200])
    assert response.json()["success"] is False
