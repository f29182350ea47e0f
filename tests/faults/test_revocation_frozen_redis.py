"""Credentials are rotated while Redis is frozen (SIGSTOP), then Redis thaws: the old token is refused
by every web process within the bound (5 s), although the cache still holds its "active" state and no
beat runs; and Redis emptied (FLUSHALL) before the batched writer copied a session: its token keeps
working on every process, and a rotation still reaches every process within the bound (production shape:
two gunicorn instances sharing a Redis of the test's own; no beat, so sessions stay in Redis)."""

import os
import signal
import subprocess
import time

import pytest
from django.db import connection

from partners import services as partner_services
from partners.models import TokenSession

from .live import bearer_auth, http, own_redis_server, production_env, real_clock_env

pytestmark = pytest.mark.django_db(transaction=True)

BOUND = 5.0  # seconds after the rotation committed: from then on, no web process accepts the old token


@pytest.fixture
def own_redis(tmp_path, settings):
    """A redis-server of this test only (the shared one is never stopped), and the test process's
    cache pointed at it."""
    with own_redis_server(tmp_path) as (server, port):
        url = f"redis://127.0.0.1:{port}/0"
        direct = settings.CACHES
        settings.CACHES = {**direct, "default": {**direct["default"], "LOCATION": url}}
        try:
            yield server, url
        finally:
            settings.CACHES = direct


def test_rotation_while_redis_is_frozen_is_refused_everywhere_within_the_bound(processes, own_redis, creds):
    server, redis_url = own_redis
    env = production_env(REDIS_URL=redis_url)
    webs = [processes.web(env, name="web-a"), processes.web(env, name="web-b")]
    old = bearer_auth(webs[0], creds)
    for url in webs:  # both instances have read the session: the shared cache says "active"
        assert http("GET", url + "/v1/events", headers=old).status == 200
    # Issued and used, yet only in Redis: nothing copies it to the table without beat.
    assert not TokenSession.objects.filter(partner=creds.partner).exists()

    os.kill(server.pid, signal.SIGSTOP)
    try:
        partner_services.credentials_rotate(partner=creds.partner)  # the cache cannot be written
        committed = time.monotonic()
    finally:
        os.kill(server.pid, signal.SIGCONT)
    # The shared cache still says "active" for the old session: the revocation never reached it.
    connection.close()

    accepted_after_bound, last_accepted = [], 0.0
    deadline = committed + BOUND + 3
    while time.monotonic() < deadline:
        for url in webs:
            reply = http("GET", url + "/v1/events", headers=old)
            at = time.monotonic() - committed
            assert reply.status in (200, 401), reply.body
            if reply.status == 200:
                last_accepted = max(last_accepted, at)
            if reply.status == 200 and at > BOUND:
                accepted_after_bound.append((url, round(at, 2)))
        time.sleep(0.1)
    print(f"old token last accepted {last_accepted:.2f} s after the rotation committed")
    assert accepted_after_bound == []
    for url in webs:
        refused = http("GET", url + "/v1/events", headers=old)
        assert refused.status == 401 and refused.code == "UNAUTHORIZED", refused.body


def _refused_everywhere_within_the_bound(webs: list[str], headers: dict, committed: float) -> None:
    accepted_after_bound = []
    deadline = committed + BOUND + 3
    while time.monotonic() < deadline:
        for url in webs:
            reply = http("GET", url + "/v1/events", headers=headers)
            at = time.monotonic() - committed
            assert reply.status in (200, 401), reply.body
            if reply.status == 200 and at > BOUND:
                accepted_after_bound.append((url, round(at, 2)))
        time.sleep(0.1)
    assert accepted_after_bound == []


def test_sessions_lost_with_redis_keep_working_and_stay_revocable(processes, own_redis, creds):
    _server, redis_url = own_redis
    env = production_env(REDIS_URL=redis_url)
    webs = [processes.web(env, name="web-a"), processes.web(env, name="web-b")]
    body = {
        "client_id": creds.client_id,
        "client_secret": creds.client_secret,
        "grant_type": "client_credentials",
    }
    tokens = [http("POST", webs[i % 2] + "/v1/auth/token", json_body=body) for i in range(3)]
    assert all(t.status == 200 for t in tokens), [t.body for t in tokens]
    headers = [{"Authorization": f"Bearer {t.body['data']['access_token']}"} for t in tokens]
    assert http("GET", webs[0] + "/v1/events", headers=headers[0]).status == 200
    assert not TokenSession.objects.filter(partner=creds.partner).exists()

    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    flushed = subprocess.run(
        ["redis-cli", "-p", port, "FLUSHALL"], capture_output=True, env=real_clock_env(), timeout=5
    )
    assert flushed.stdout.strip() == b"OK"

    # Every token still works on every process: each session is re-created from its token, once.
    for header in headers:
        for url in webs:
            reply = http("GET", url + "/v1/events", headers=header)
            assert reply.status == 200, reply.body
    assert TokenSession.objects.filter(partner=creds.partner, revoked_at__isnull=True).count() == 3

    partner_services.credentials_rotate(partner=creds.partner)
    committed = time.monotonic()
    connection.close()
    for header in headers:
        _refused_everywhere_within_the_bound(webs, header, committed)
        for url in webs:
            refused = http("GET", url + "/v1/events", headers=header)
            assert refused.status == 401 and refused.code == "UNAUTHORIZED", refused.body
