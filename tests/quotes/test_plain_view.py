"""POST /v1/quotes and POST /v1/auth/token answer without DRF's dispatch (config/api/plain.py), exactly as their
DRF views answer: every status, header, error code, message and field path."""

import json
from unittest import mock

import pytest
from django.conf import settings
from django.core.handlers.base import BaseHandler
from rest_framework.test import APIClient
from rest_framework.views import APIView

from tests.conftest import issue_token

pytestmark = pytest.mark.django_db

VOLATILE = {"X-Request-ID", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit", "Content-Length"}
# DRF's path: an Accept with an indent asks DRF's renderer, which renders indent=0 as compact JSON.
THROUGH_DRF = {"HTTP_ACCEPT": "application/json; indent=0"}


def _answer(response) -> tuple:
    headers = {name: value for name, value in response.items() if name not in VOLATILE}
    body = response.json()
    body.pop("meta")
    for name in ("quote_id", "access_token", "expires_at", "exp_dt"):
        (body.get("data") or {}).pop(name, None)
    return response.status_code, headers, body


def _both(client, path, raw: bytes, **extra) -> tuple[tuple, tuple]:
    plain = client.generic("POST", path, raw, content_type="application/json", **extra)
    drf = client.generic("POST", path, raw, content_type="application/json", **THROUGH_DRF, **extra)
    return _answer(plain), _answer(drf)


def test_a_quote_and_a_token_are_answered_without_drfs_dispatch(auth_client, partner_creds, quote_body):
    with mock.patch.object(APIView, "dispatch", side_effect=AssertionError("DRF's dispatch")):
        response = auth_client.post("/v1/quotes", quote_body(), format="json")
        assert response.status_code == 201, response.content
        assert response["Allow"] == "POST, OPTIONS"
        assert issue_token(APIClient(), partner_creds)  # 200


def test_a_quote_is_answered_as_the_drf_view_answers(auth_client, quote_body):
    good = quote_body()
    bodies = [
        good,
        {**good, "row_name": None},
        {k: v for k, v in good.items() if k != "row_name"},
        {**good, "user_metadata": None},
        {**good, "user_metadata": {"first_name": " Ana ", "email": "", "unknown": 1}},
        {**good, "section_name": f"  {good['section_name']} ", "extra": "ignored"},
        {**good, "quantity": "1"},
        {**good, "quantity": True},
        {**good, "quantity": 1.0},
        {**good, "quantity": 0},
        {**good, "quantity": 51},
        {**good, "event_id": ""},
        {**good, "event_id": "   "},
        {**good, "event_id": None},
        {**good, "event_id": 7},
        {**good, "event_id": "e" * 33},
        {**good, "event_id": "evt_\x00"},
        {**good, "section_name": "\ud800"},
        {**good, "row_name": ""},
        {**good, "row_name": ["A"]},
        {**good, "user_metadata": "Ana"},
        {**good, "user_metadata": {"email": "not-an-address"}},
        {**good, "user_metadata": {"email": 3}},
        {**good, "user_metadata": {"phone_number": "1" * 33}},
        {**good, "event_id": "evt_unknown"},
        {**good, "row_name": "ZZ"},
        {**good, "quantity": 50},
        {"quantity": "x", "section_name": None},
        {},
        [],
        "text",
    ]
    for body in bodies:
        raw = json.dumps(body).encode()
        plain, drf = _both(auth_client, "/v1/quotes", raw)
        assert plain == drf, body
    for raw in (b"{", b"NaN", b'{"quantity": NaN}', b"\xff", b"[" * 5000):
        plain, drf = _both(auth_client, "/v1/quotes", raw)
        assert plain == drf, raw
    for method in ("TRACE", "PUT", "PATCH", "DELETE"):  # another method with the same body: DRF's 405
        response = auth_client.generic(
            method, "/v1/quotes", json.dumps(good), content_type="application/json"
        )
        assert response.status_code == 405, (method, response.content)
        assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    anonymous = APIClient()
    for extra in ({}, {"HTTP_AUTHORIZATION": "Bearer nope"}, {"HTTP_AUTHORIZATION": "Basic x"}):
        plain, drf = _both(anonymous, "/v1/quotes", json.dumps(good).encode(), **extra)
        assert plain == drf, extra


def test_a_token_is_answered_as_the_drf_view_answers(partner_creds):
    good = {
        "client_id": partner_creds.client_id,
        "client_secret": partner_creds.client_secret,
        "grant_type": "client_credentials",
    }
    bodies = [
        good,
        {**good, "client_id": f" {partner_creds.client_id} ", "scope": "ignored"},
        {**good, "grant_type": "password"},
        {**good, "client_secret": "sec_wrong"},
        {**good, "client_id": "cli_nobody"},
        {k: v for k, v in good.items() if k != "grant_type"},
        {**good, "client_id": ""},
        {**good, "client_id": 3},
        {**good, "client_secret": None},
        {**good, "grant_type": "g" * 51},
        {**good, "client_id": "\x00"},
        {},
        [],
    ]
    client = APIClient()
    for body in bodies:
        plain, drf = _both(client, "/v1/auth/token", json.dumps(body).encode())
        assert plain == drf, body
    for raw in (b"{", b"\xff"):
        plain, drf = _both(client, "/v1/auth/token", raw)
        assert plain == drf, raw
    for method in ("TRACE", "PUT", "PATCH", "DELETE"):  # another method with the same body: DRF's 405
        response = client.generic(method, "/v1/auth/token", json.dumps(good), content_type="application/json")
        assert response.status_code == 405, (method, response.content)
        assert response["Allow"] == "POST, OPTIONS"


def test_a_quote_and_a_token_take_the_short_path_resolved_once(auth_client, partner_creds, quote_body):
    refuse = mock.Mock(side_effect=AssertionError("resolved by Django's handler"))
    with mock.patch.object(BaseHandler, "resolve_request", refuse):
        response = auth_client.post("/v1/quotes", quote_body(), format="json")
        assert response.status_code == 201, response.content
        assert response.resolver_match.url_name == "quotes-create"
        assert response["X-Request-ID"].startswith("req_")
        assert response["RateLimit-Limit"]
        assert issue_token(APIClient(), partner_creds)
    assert refuse.call_count == 0


def test_a_body_over_the_limit_and_an_idempotency_key_are_the_chains(auth_client, quote_body):
    too_big = str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    for path in ("/v1/quotes", "/v1/auth/token"):
        response = auth_client.generic(
            "POST", path, json.dumps(quote_body()), content_type="application/json", CONTENT_LENGTH=too_big
        )
        assert response.status_code == 413, response.content
        assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    first = auth_client.post("/v1/quotes", quote_body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = auth_client.post("/v1/quotes", quote_body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
