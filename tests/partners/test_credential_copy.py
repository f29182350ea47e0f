"""The token endpoint answers from a copy of the credential in the shared cache; a rotation, a suspension or a
reactivation is never hidden by it (partners.token_cache, "Credentials, for the token endpoint")."""

import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partners import revocation, services, token_cache
from tests.conftest import PartnerWithCredentials, assert_error

TOKEN_URL = "/v1/auth/token"


@pytest.fixture(autouse=True)
def _fresh_watch():
    revocation.revocation_watch.reset()
    yield
    revocation.revocation_watch.reset()


def _token(client, creds: PartnerWithCredentials, secret: str | None = None):
    body = {
        "client_id": creds.client_id,
        "client_secret": secret or creds.client_secret,
        "grant_type": "client_credentials",
    }
    return client.post(TOKEN_URL, body, format="json")


def _cache_writes_down(monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    for name in ("set", "set_many"):
        monkeypatch.setattr(cache, name, down)
    monkeypatch.setattr("partners.session_services.sessions_pending", down)


def test_the_second_token_request_reads_no_credential_row(api_client, partner_creds):
    assert _token(api_client, partner_creds).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert _token(api_client, partner_creds).status_code == 200
    assert not [q for q in queries if "secret_digest" in q["sql"]]


def test_a_rotation_takes_effect_at_the_token_endpoint_at_once(api_client, partner_creds):
    assert _token(api_client, partner_creds).status_code == 200  # the copy is made
    rotated = services.credentials_rotate(partner=partner_creds.partner)
    assert_error(_token(api_client, partner_creds), 401, "INVALID_CREDENTIALS")
    assert _token(api_client, partner_creds, rotated.client_secret).status_code == 200


def test_a_rotation_the_cache_missed_never_refuses_the_new_secret(api_client, partner_creds, monkeypatch):
    assert _token(api_client, partner_creds).status_code == 200
    _cache_writes_down(monkeypatch)
    rotated = services.credentials_rotate(partner=partner_creds.partner)
    monkeypatch.undo()
    token_cache.cache_health.take()  # this process is not the one that saw the failure
    # The stale copy holds the old digest: a refusal from a copy is checked in the database first.
    assert _token(api_client, partner_creds, rotated.client_secret).status_code == 200


def test_a_rotation_the_cache_missed_refuses_the_old_secret_within_the_poll(
    api_client, partner_creds, settings, monkeypatch
):
    settings.TOKEN_REVOCATION_POLL_SECONDS = 0.5
    assert _token(api_client, partner_creds).status_code == 200
    _cache_writes_down(monkeypatch)
    services.credentials_rotate(partner=partner_creds.partner)
    monkeypatch.undo()
    token_cache.cache_health.take()
    time.sleep(0.6)  # the watch reads the credential's new generation: the copy is not believed
    assert_error(_token(api_client, partner_creds), 401, "INVALID_CREDENTIALS")


def test_suspension_and_reactivation_take_effect_at_once(api_client, partner_creds):
    assert _token(api_client, partner_creds).status_code == 200
    partner = services.partner_suspend(partner=partner_creds.partner, reason="unpaid invoices")
    assert_error(_token(api_client, partner_creds), 403, "ACCOUNT_SUSPENDED")
    services.partner_reactivate(partner=partner)
    assert _token(api_client, partner_creds).status_code == 200


def test_a_reactivation_the_cache_missed_is_not_answered_suspended(api_client, partner_creds, monkeypatch):
    assert _token(api_client, partner_creds).status_code == 200
    partner = services.partner_suspend(partner=partner_creds.partner)
    assert_error(_token(api_client, partner_creds), 403, "ACCOUNT_SUSPENDED")  # the copy says suspended
    _cache_writes_down(monkeypatch)
    services.partner_reactivate(partner=partner)
    monkeypatch.undo()
    token_cache.cache_health.take()
    assert _token(api_client, partner_creds).status_code == 200
