"""A revocation the shared cache missed still holds on every process within the poll interval: each
process reads the latest revocations from the database (partners.revocation.RevocationWatch)."""

import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partners import revocation, services, token_cache
from tests.conftest import assert_error


@pytest.fixture
def watch(settings):
    settings.TOKEN_REVOCATION_POLL_SECONDS = 0.5
    revocation.revocation_watch.reset()
    yield revocation.revocation_watch
    revocation.revocation_watch.reset()


def _get(client):
    return client.get("/v1/events")


def _cache_down_for_writes(monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    for name in ("set", "set_many", "delete_many"):
        monkeypatch.setattr(cache, name, down)


def test_a_revocation_the_cache_missed_is_refused_once_the_watch_looks_again(
    auth_client, partner, watch, monkeypatch
):
    assert _get(auth_client).status_code == 200  # cached as active in the shared cache
    _cache_down_for_writes(monkeypatch)
    services.credentials_rotate(partner=partner)  # the cache keeps its stale "active"
    monkeypatch.undo()
    token_cache.cache_health.take()  # this process is not the one that saw the failure

    time.sleep(0.6)  # the poll interval
    assert_error(_get(auth_client), 401, "UNAUTHORIZED")


def test_a_suspension_the_cache_missed_answers_account_suspended(auth_client, partner, watch, monkeypatch):
    assert _get(auth_client).status_code == 200
    _cache_down_for_writes(monkeypatch)
    services.partner_suspend(partner=partner)
    monkeypatch.undo()
    token_cache.cache_health.take()
    time.sleep(0.6)
    assert_error(_get(auth_client), 403, "ACCOUNT_SUSPENDED")


def test_the_watch_reads_the_database_at_most_once_per_interval(auth_client, settings, watch):
    settings.TOKEN_REVOCATION_POLL_SECONDS = 60
    assert _get(auth_client).status_code == 200  # first look
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert _get(auth_client).status_code == 200
    assert not [q for q in queries if "revoked_at" in q["sql"]]


def test_a_token_of_another_session_is_unaffected(auth_client, partner, partner_creds, watch, monkeypatch):
    from rest_framework.test import APIClient

    from tests.conftest import issue_token

    assert _get(auth_client).status_code == 200
    _cache_down_for_writes(monkeypatch)
    rotated = services.credentials_rotate(partner=partner)
    monkeypatch.undo()
    token_cache.cache_health.take()
    partner_creds.client_secret = rotated.client_secret
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(fresh, partner_creds)}")
    time.sleep(0.6)
    assert _get(fresh).status_code == 200
    assert _get(auth_client).status_code == 401
