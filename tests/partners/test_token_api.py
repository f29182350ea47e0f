import logging
from datetime import UTC, datetime

import pytest
import time_machine

from partners import services, session_services
from partners.models import PartnerCredential, TokenSession
from tests.conftest import assert_error, issue_token, make_partner

TOKEN_URL = "/v1/auth/token"


def _body(creds, **overrides):
    body = {
        "client_id": creds.client_id,
        "client_secret": creds.client_secret,
        "grant_type": "client_credentials",
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


def test_token_success_has_the_spec_shape(api_client, partner_creds):
    with time_machine.travel(datetime(2026, 11, 21, 18, 30, tzinfo=UTC), tick=False):
        response = api_client.post(TOKEN_URL, _body(partner_creds), format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    data = body["data"]
    assert set(data) == {"access_token", "token_type", "expires_at", "expires_in", "scope"}
    assert data["token_type"] == "Bearer"
    assert data["expires_in"] == 3600
    assert data["expires_at"] == "2026-11-21T19:30:00Z"
    assert data["scope"] == "events:read quotes:write orders:write webhooks:write"
    assert isinstance(data["access_token"], str) and data["access_token"].count(".") == 1
    assert body["meta"]["request_id"].startswith("req_")
    assert response["X-Request-ID"] == body["meta"]["request_id"]
    assert response["Cache-Control"] == "no-store"
    session_services.token_sessions_flush()  # with Redis the session reaches the table by the batched writer
    assert TokenSession.objects.filter(partner=partner_creds.partner).count() == 1


def test_token_accepts_form_encoded_body(api_client, partner_creds):
    from urllib.parse import urlencode

    response = api_client.post(
        TOKEN_URL, urlencode(_body(partner_creds)), content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200


def test_expires_in_follows_the_setting(api_client, partner_creds, settings):
    settings.ACCESS_TOKEN_TTL_SECONDS = 120
    response = api_client.post(TOKEN_URL, _body(partner_creds), format="json")
    assert response.json()["data"]["expires_in"] == 120


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "grant_type"])
def test_token_missing_field_is_validation_error(api_client, partner_creds, missing):
    body = _body(partner_creds)
    del body[missing]
    error = assert_error(api_client.post(TOKEN_URL, body, format="json"), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == missing
    assert error["details"]["issue"] == "required"


def test_token_lists_every_missing_field(api_client, db):
    error = assert_error(api_client.post(TOKEN_URL, {}, format="json"), 400, "VALIDATION_ERROR")
    assert {e["field"] for e in error["details"]["errors"]} == {"client_id", "client_secret", "grant_type"}


def test_token_body_that_is_not_json_is_validation_error(api_client, db):
    response = api_client.generic("POST", TOKEN_URL, "{not json", content_type="application/json")
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"] == {"field": "body", "issue": "invalid"}


def test_unsupported_grant_type(api_client, partner_creds):
    assert_error(
        api_client.post(TOKEN_URL, _body(partner_creds, grant_type="password"), format="json"),
        400,
        "UNSUPPORTED_GRANT_TYPE",
    )


def test_grant_type_is_checked_before_credentials(api_client, db):
    body = {"client_id": "cli_nobody", "client_secret": "sec_wrong", "grant_type": "authorization_code"}
    assert_error(api_client.post(TOKEN_URL, body, format="json"), 400, "UNSUPPORTED_GRANT_TYPE")


def test_wrong_secret_is_invalid_credentials(api_client, partner_creds):
    response = api_client.post(TOKEN_URL, _body(partner_creds, client_secret="sec_wrong"), format="json")
    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert not TokenSession.objects.exists()


def test_unknown_client_is_invalid_credentials(api_client, partner_creds):
    assert_error(
        api_client.post(TOKEN_URL, _body(partner_creds, client_id="cli_unknown"), format="json"),
        401,
        "INVALID_CREDENTIALS",
    )


def test_suspended_partner_cannot_get_a_token(api_client, db):
    creds = make_partner(name="Dormant", suspended=True)
    assert_error(api_client.post(TOKEN_URL, _body(creds), format="json"), 403, "ACCOUNT_SUSPENDED")


def test_credentials_are_checked_before_account_status(api_client, db):
    creds = make_partner(name="Dormant", suspended=True)
    assert_error(
        api_client.post(TOKEN_URL, _body(creds, client_secret="sec_bad"), format="json"),
        401,
        "INVALID_CREDENTIALS",
    )


def test_secret_is_stored_only_as_digest_and_never_logged(api_client, db, caplog):
    caplog.set_level(logging.DEBUG)
    creds = make_partner(name="Careful Co")
    api_client.post(TOKEN_URL, _body(creds), format="json")
    api_client.post(TOKEN_URL, _body(creds, client_secret=creds.client_secret + "x"), format="json")
    rotated = services.credentials_rotate(partner=creds.partner)
    row = PartnerCredential.objects.get(client_id=creds.client_id)
    stored = " ".join(str(getattr(row, f.attname)) for f in PartnerCredential._meta.fields)
    for secret in (creds.client_secret, rotated.client_secret):
        assert secret not in stored
        assert secret[4:] not in stored
        assert secret not in caplog.text
    assert len(row.secret_digest) == 64


def test_secret_is_high_entropy_and_prefixed(db):
    creds = make_partner(name="Entropy")
    assert creds.client_id.startswith("cli_")
    assert creds.client_secret.startswith("sec_")
    assert len(creds.client_secret) >= 4 + 43  # 32 random bytes, base64url


def test_token_response_never_echoes_the_secret(api_client, partner_creds):
    response = api_client.post(TOKEN_URL, _body(partner_creds), format="json")
    assert partner_creds.client_secret not in response.content.decode()
    response = api_client.post(TOKEN_URL, _body(partner_creds, grant_type=None), format="json")
    assert partner_creds.client_secret not in response.content.decode()


def test_a_token_request_costs_no_statement_with_redis(api_client, partner_creds):
    """The credential is read from its copy in the shared cache (made by the first request), the session is
    created in Redis and reaches the table by the batched writer: no statement."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    issue_token(api_client, partner_creds)
    with CaptureQueriesContext(connection) as queries:
        issue_token(api_client, partner_creds)
    assert len(queries) == 0, [q["sql"] for q in queries]
    assert TokenSession.objects.filter(partner=partner_creds.partner).count() == 0


def test_beat_writes_token_sessions_kept_in_redis(settings):
    entry = settings.CELERY_BEAT_SCHEDULE.get("partners-flush-token-sessions")
    assert entry == {"task": "partners.tasks.token_sessions_flush", "schedule": 2.0}
