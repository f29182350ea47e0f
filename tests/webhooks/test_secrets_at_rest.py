"""A secret the API shows once is never kept in clear: not in any table, not in the cache, not in the stored
answer that an Idempotency-Key replays (sealed there like the endpoint's own copy), and a replay still shows it."""

import json

import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connection

from partners.idempotency.models import IdempotencyKey
from tests.idempotency.conftest import assert_replay_of, keyed

pytestmark = pytest.mark.django_db
BASE = "/v1/webhook_endpoints"
LIST = "/portal/settings/webhooks/"


def _forms(secret: str) -> list[bytes]:
    """The secret as text and the random part alone, as they would appear in any stored encoding."""
    return [secret.encode(), secret.removeprefix("whsec_").removeprefix("sec_").encode()]


def _database_values() -> list[bytes]:
    """Every value of every column of every table, as bytes."""
    values: list[bytes] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608 - table names
            for row in cursor.fetchall():
                for value in row:
                    if value is None:
                        continue
                    if isinstance(value, memoryview):
                        value = value.tobytes()
                    values.append(value if isinstance(value, bytes) else str(value).encode())
    return values


def _cache_values() -> list[bytes]:
    """Every key and value in the shared cache: the whole Redis database, or the local-memory cache."""
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        found: list[bytes] = []
        for key in client.scan_iter(count=1000):
            found.append(key)
            kind = client.type(key).decode()
            if kind == "string":
                found.append(client.get(key) or b"")
            elif kind == "hash":
                found.extend(b for pair in client.hgetall(key).items() for b in pair)
            elif kind == "list":
                found.extend(client.lrange(key, 0, -1))
            elif kind == "set":
                found.extend(client.smembers(key))
            elif kind == "zset":
                found.extend(client.zrange(key, 0, -1))
            elif kind == "stream":
                found.extend(str(client.xrange(key)).encode() for _ in [0])
        return found
    backend = caches["default"]
    return [str(k).encode() for k in backend._cache] + [
        v for v in backend._cache.values() if isinstance(v, bytes)
    ]


def _assert_stored_nowhere(secrets: list[str]) -> None:
    stored = _database_values() + _cache_values()
    assert stored, "nothing was read: the scan itself is broken"
    for secret in secrets:
        for form in _forms(secret):
            holders = [value[:120] for value in stored if form in value]
            assert not holders, f"{secret[:10]}… is stored in clear: {holders}"


def test_no_secret_shown_once_is_stored_in_clear_anywhere(auth_client, partner_creds, receiver):
    created = auth_client.post(
        BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("create-1")
    )
    assert created.status_code == 201, created.content
    endpoint_id = created.json()["data"]["endpoint_id"]
    rotated = auth_client.post(
        f"{BASE}/{endpoint_id}/rotate_secret",
        {"expire_previous_in_seconds": 3600},
        format="json",
        **keyed("rotate-1"),
    )
    assert rotated.status_code == 200, rotated.content
    secrets = [
        created.json()["data"]["secret"],
        rotated.json()["data"]["secret"],
        partner_creds.client_secret,
    ]
    assert secrets[0] != secrets[1]

    _assert_stored_nowhere(secrets)
    # Sealed, not dropped: the replays show the very same secrets.
    assert set(IdempotencyKey.objects.get(key="create-1").response_body) == {"sealed"}
    replay = auth_client.post(
        BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("create-1")
    )
    assert_replay_of(created, replay)
    replay = auth_client.post(
        f"{BASE}/{endpoint_id}/rotate_secret",
        {"expire_previous_in_seconds": 3600},
        format="json",
        **keyed("rotate-1"),
    )
    assert_replay_of(rotated, replay)
    _assert_stored_nowhere(secrets)


def test_answers_without_a_secret_are_stored_as_they_are(auth_client, receiver):
    created = auth_client.post(BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json")
    endpoint_id = created.json()["data"]["endpoint_id"]
    updated = auth_client.post(f"{BASE}/{endpoint_id}/ping", format="json", **keyed("ping-1"))
    assert updated.status_code == 202, updated.content
    stored = IdempotencyKey.objects.get(key="ping-1").response_body
    assert stored["data"]["delivery_id"] == updated.json()["data"]["delivery_id"]


def test_a_sealed_answer_does_not_open_in_another_row(auth_client, receiver):
    created = auth_client.post(
        BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("a")
    )
    assert created.status_code == 201
    other = auth_client.post(BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("b"))
    sealed_a = IdempotencyKey.objects.get(key="a").response_body
    IdempotencyKey.objects.filter(key="b").update(response_body=sealed_a)
    moved = auth_client.post(BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("b"))
    assert moved.status_code == 500
    assert created.json()["data"]["secret"].encode() not in moved.content
    assert other.status_code == 201


def _session_values() -> list[bytes]:
    """Every session's decoded content (what a session row holds once its signing is undone)."""
    from django.contrib.sessions.models import Session

    return [json.dumps(session.get_decoded(), default=str).encode() for session in Session.objects.all()]


def test_the_portal_carries_a_new_secret_to_its_page_sealed(receiver):
    from tests.portal.fixtures import PASSWORD, portal_login

    acme = portal_login(name="Acme Tickets", email="alice@acme.example", payment_methods=True)
    added = acme.client.post(LIST + "add", {"url": receiver.url(), "event_types": ["*"]})
    assert added.status_code == 302
    rotated = acme.client.post("/portal/settings/api-credentials", {"password": PASSWORD})
    assert rotated.status_code == 302
    # Between the POST and the page that shows it, the secret waits in the session: sealed.
    waiting = _database_values() + _cache_values() + _session_values()

    webhook_page = acme.client.get(added["Location"]).content.decode()
    webhook_secret = webhook_page.split('data-testid="webhook-secret">', 1)[1].split("<", 1)[0]
    credentials_page = acme.client.get("/portal/settings/api-credentials").content.decode()
    client_secret = credentials_page.split('data-testid="client-secret">', 1)[1].split("<", 1)[0]
    assert webhook_secret.startswith("whsec_") and client_secret.startswith("sec_")
    for secret in (webhook_secret, client_secret):
        for form in _forms(secret):
            assert not [value[:120] for value in waiting if form in value]
