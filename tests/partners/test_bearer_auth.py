"""Bearer tokens on protected endpoints: tampered, truncated, expired, revoked, suspended, scopes."""

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

from partners import services, tokens
from tests.conftest import assert_error, issue_token


class ScopedView(APIView):
    required_scope = "events:read"

    def get(self, request):
        return Response({"partner_id": request.user.partner_id})


class NoSuchScopeView(APIView):
    required_scope = "admin:everything"

    def get(self, request):
        return Response({})


urlpatterns = [
    path("v1/_probe", ScopedView.as_view()),
    path("v1/_probe_admin", NoSuchScopeView.as_view()),
    path("", include("config.urls")),
]

pytestmark = pytest.mark.urls("tests.partners.test_bearer_auth")


def _get(client, token=None, url="/v1/_probe", header=None):
    headers = {}
    if header is not None:
        headers["HTTP_AUTHORIZATION"] = header
    elif token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client.get(url, **headers)


def test_valid_token_reaches_the_view(api_client, auth_client, partner):
    response = _get(api_client, auth_client.token)
    assert response.status_code == 200
    assert response.json()["data"] == {"partner_id": partner.public_id}
    assert response["RateLimit-Limit"] == "600"
    assert int(response["RateLimit-Remaining"]) <= 599


def test_missing_token_is_unauthorized_with_www_authenticate(api_client, db):
    response = _get(api_client)
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "invalid_token" not in response["WWW-Authenticate"]


def test_wrong_scheme_is_unauthorized(api_client, auth_client):
    assert_error(_get(api_client, header=f"Basic {auth_client.token}"), 401, "UNAUTHORIZED")


def test_tampered_token_is_unauthorized(api_client, auth_client):
    payload_b64, signature = auth_client.token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(payload_b64 + "=" * (-len(payload_b64) % 4)))
    payload["p"] = "ptn_someoneelse"
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=") + "." + signature
    response = _get(api_client, forged)
    assert_error(response, 401, "UNAUTHORIZED")
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


@pytest.mark.parametrize("cut", [1, 10, 40])
def test_truncated_token_is_unauthorized(api_client, auth_client, cut):
    assert_error(_get(api_client, auth_client.token[:-cut]), 401, "UNAUTHORIZED")


def test_garbage_token_is_unauthorized(api_client, db):
    assert_error(_get(api_client, "not-a-token"), 401, "UNAUTHORIZED")
    assert_error(_get(api_client, "a.b.c"), 401, "UNAUTHORIZED")


def test_expired_token_is_token_expired(api_client, auth_client):
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=3601)):
        response = _get(api_client, auth_client.token)
    assert_error(response, 401, "TOKEN_EXPIRED")
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_token_still_valid_just_before_expiry(api_client, auth_client):
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=3590)):
        assert _get(api_client, auth_client.token).status_code == 200


def test_expired_token_with_bad_signature_is_unauthorized(api_client, partner, settings):
    token = tokens.sign(
        partner_id=partner.public_id,
        session_id="tks_x",
        expires_at=datetime.now(UTC) - timedelta(hours=1),
        scope="events:read",
    )
    settings.TOKEN_SIGNING_KEY = "another-key"
    assert_error(_get(api_client, token), 401, "UNAUTHORIZED")


def test_token_for_unknown_session_is_unauthorized(api_client, partner):
    token = tokens.sign(
        partner_id=partner.public_id,
        session_id="tks_unknown",
        expires_at=datetime.now(UTC) + timedelta(hours=1),
        scope="events:read",
    )
    assert_error(_get(api_client, token), 401, "UNAUTHORIZED")


def test_rotation_revokes_existing_tokens(api_client, auth_client, partner_creds):
    assert _get(api_client, auth_client.token).status_code == 200  # warm the cache
    issued = services.credentials_rotate(partner=partner_creds.partner)
    assert_error(_get(api_client, auth_client.token), 401, "UNAUTHORIZED")
    assert issued.client_id == partner_creds.client_id
    partner_creds.client_secret = issued.client_secret
    assert _get(api_client, issue_token(api_client, partner_creds)).status_code == 200


def test_suspension_revokes_tokens_with_account_suspended(api_client, auth_client, partner):
    assert _get(api_client, auth_client.token).status_code == 200
    services.partner_suspend(partner=partner, reason="chargebacks")
    assert_error(_get(api_client, auth_client.token), 403, "ACCOUNT_SUSPENDED")


def test_suspension_is_seen_with_a_cold_cache(api_client, auth_client, partner):
    from django.core.cache import cache

    services.partner_suspend(partner=partner)
    cache.clear()
    assert_error(_get(api_client, auth_client.token), 403, "ACCOUNT_SUSPENDED")


def test_reactivation_keeps_old_tokens_dead_and_allows_new_ones(api_client, auth_client, partner_creds):
    services.partner_suspend(partner=partner_creds.partner)
    services.partner_reactivate(partner=partner_creds.partner)
    assert_error(_get(api_client, auth_client.token), 401, "UNAUTHORIZED")
    assert _get(api_client, issue_token(api_client, partner_creds)).status_code == 200


def test_missing_scope_is_forbidden(api_client, auth_client):
    error = assert_error(_get(api_client, auth_client.token, url="/v1/_probe_admin"), 403, "FORBIDDEN")
    assert error["details"] == {"required_scope": "admin:everything"}


def test_token_with_narrow_scope_is_forbidden_elsewhere(api_client, partner):
    session = partner.token_sessions.create(
        scope="quotes:write", expires_at=datetime.now(UTC) + timedelta(hours=1)
    )
    token = tokens.sign(
        partner_id=partner.public_id,
        session_id=session.session_id,
        expires_at=session.expires_at,
        scope="quotes:write",
    )
    assert_error(_get(api_client, token), 403, "FORBIDDEN")


def test_warm_token_costs_no_database_query(api_client, auth_client):
    assert _get(api_client, auth_client.token).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert _get(api_client, auth_client.token).status_code == 200
    assert len(queries) == 0, [q["sql"] for q in queries]


def test_revocation_during_a_cache_outage_holds_once_the_cache_is_back(
    api_client, auth_client, partner, monkeypatch
):
    """A session cached as active before Redis went down must not come back to life after it returns."""
    from django.core.cache import cache

    from partners import token_cache

    assert _get(api_client, auth_client.token).status_code == 200  # cached as active

    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    for name in ("get", "get_many", "set", "set_many", "delete_many"):
        monkeypatch.setattr(cache, name, down)
    # Authentication's one round trip (session state and rate count, pipelined) fails the same way.
    from config.api import ratelimit

    monkeypatch.setattr(ratelimit, "hit_and_read", lambda **kwargs: (None, None))
    services.credentials_rotate(partner=partner)  # cannot reach the cache
    assert_error(_get(api_client, auth_client.token), 401, "UNAUTHORIZED")  # the database decides
    monkeypatch.undo()

    assert token_cache.cache_health.take() is True
    token_cache.cache_health.failed()
    assert _get(api_client, auth_client.token).status_code == 401  # recovery re-published the revocation
    assert cache.get(token_cache.session_cache_key(TokenSession_ids(partner)[0]))[0] == "revoked"


def test_the_beat_task_publishes_revocations_the_cache_missed(api_client, auth_client, partner, monkeypatch):
    from django.core.cache import cache

    from partners import token_cache
    from partners.tasks import token_revocations_publish

    assert _get(api_client, auth_client.token).status_code == 200
    monkeypatch.setattr(cache, "set_many", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("down")))
    services.partner_suspend(partner=partner)
    monkeypatch.undo()
    token_cache.cache_health.take()  # this process forgets; another process's beat still repairs it
    assert token_revocations_publish() >= 1
    assert_error(_get(api_client, auth_client.token), 403, "ACCOUNT_SUSPENDED")


def TokenSession_ids(partner) -> list[str]:
    return list(partner.token_sessions.values_list("session_id", flat=True))
