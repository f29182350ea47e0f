"""Every response under /v1/ is the envelope, whatever goes wrong."""

import logging

import pytest
from django.test import Client

from config.api import errors
from tests.conftest import assert_error

pytestmark = [pytest.mark.urls("tests.config.urls_probe"), pytest.mark.django_db]


def test_unknown_path_is_not_found_envelope(api_client):
    response = api_client.get("/v1/no/such/thing")
    assert_error(response, 404, "NOT_FOUND")
    assert response["Content-Type"].startswith("application/json")
    assert response["X-Request-ID"] == response.json()["meta"]["request_id"]


def test_v1_root_is_not_found_envelope(api_client):
    assert_error(api_client.get("/v1"), 404, "NOT_FOUND")
    assert_error(api_client.get("/v1/"), 404, "NOT_FOUND")


def test_wrong_method_is_405_envelope_with_allow(api_client):
    response = api_client.get("/v1/auth/token")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "POST" in response["Allow"]


def test_exception_in_a_view_is_internal_error_without_traceback(api_client, caplog):
    caplog.set_level(logging.ERROR)
    response = api_client.get("/v1/_boom", HTTP_X_REQUEST_ID="support-case-42")
    error = assert_error(response, 500, "INTERNAL_ERROR")
    assert "kaboom" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert "details" not in error
    assert response.json()["meta"]["request_id"] == "support-case-42"
    records = [r for r in caplog.records if r.name == "config.api" and r.levelno >= logging.ERROR]
    assert len(records) == 1
    assert records[0].request_id == "support-case-42"
    assert records[0].exc_info is not None  # the traceback goes to the log, not to the partner


def test_exception_outside_drf_is_internal_error_envelope():
    client = Client(raise_request_exception=False)
    response = client.get("/v1/_plain_boom")
    assert_error(response, 500, "INTERNAL_ERROR")


def test_oversized_json_body_is_413_envelope(api_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_client.post("/v1/_echo", {"blob": "x" * 2000}, format="json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_body_under_the_limit_is_served(api_client):
    response = api_client.post("/v1/_echo", {"a": 1, "b": 2}, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "data": {"received": ["a", "b"]},
        "meta": response.json()["meta"],
    }


def test_client_request_id_is_honoured_and_echoed(api_client):
    response = api_client.get("/v1/nope", HTTP_X_REQUEST_ID="partner-trace-0001")
    assert response["X-Request-ID"] == "partner-trace-0001"
    assert response.json()["meta"]["request_id"] == "partner-trace-0001"


@pytest.mark.parametrize("bad", ["x" * 129, "line\nbreak", "tab\there", "   "])
def test_unusable_client_request_id_is_replaced(api_client, bad):
    response = api_client.get("/v1/nope", HTTP_X_REQUEST_ID=bad)
    rid = response["X-Request-ID"]
    assert rid.startswith("req_") and len(rid) == 28


def test_request_ids_are_24_letters_and_digits_each_as_likely_from_one_read_of_the_generator():
    import re
    import secrets
    from collections import Counter
    from unittest import mock

    from config.api.middleware import new_request_id

    with mock.patch.object(secrets, "token_bytes", wraps=secrets.token_bytes) as reads:
        ids = [new_request_id() for _ in range(3000)]
    assert all(re.fullmatch(r"req_[A-Za-z0-9]{24}", rid) for rid in ids)
    assert len(set(ids)) == len(ids)
    # A second read only when more than 8 of the 32 bytes fall above 247: a chance of about 4 in ten million.
    assert len(ids) <= reads.call_count <= len(ids) + 3
    counts = Counter("".join(rid[4:] for rid in ids))
    assert len(counts) == 62
    # 72,000 characters, 1,161 expected of each: 6 standard deviations (about 204) either side.
    assert all(abs(n - 72000 / 62) < 6 * (72000 / 62) ** 0.5 for n in counts.values()), counts


def test_odd_accept_header_still_gets_json(api_client):
    response = api_client.get("/v1/events", HTTP_ACCEPT="text/html")
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["success"] is False


def test_portal_and_admin_keep_html_404(client):
    response = client.get("/portal/definitely-not-here")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_every_spec_code_is_in_the_catalogue():
    spec_codes = {
        "INVALID_CREDENTIALS": 401,
        "UNAUTHORIZED": 401,
        "TOKEN_EXPIRED": 401,
        "UNSUPPORTED_GRANT_TYPE": 400,
        "ACCOUNT_SUSPENDED": 403,
        "FORBIDDEN": 403,
        "PAYOUT_METHOD_NOT_CONFIGURED": 403,
        "VALIDATION_ERROR": 400,
        "EVENT_NOT_FOUND": 404,
        "EVENT_EXPIRED": 422,
        "SECTION_NOT_FOUND": 404,
        "INSUFFICIENT_QUANTITY": 422,
        "QUOTE_NOT_FOUND": 404,
        "QUOTE_EXPIRED": 422,
        "QUOTE_ALREADY_CONSUMED": 422,
        "INVALID_DELIVERY_DEADLINE": 422,
        "RATE_LIMIT_EXCEEDED": 429,
        "INTERNAL_ERROR": 500,
        "IN_HAND_DATE_REQUIRED": 400,
        "FILE_REQUIRED": 400,
    }
    catalogue = {cls.code: cls.status for cls in errors.all_error_classes()}
    for code, status in spec_codes.items():
        assert catalogue.get(code) == status, code
