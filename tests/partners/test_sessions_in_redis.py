"""Token sessions live in Redis first and reach PostgreSQL through the batched writer; nothing a partner was
promised depends on Redis alone (partners/token_cache.py, partners.session_services.token_sessions_flush)."""

import time

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partners import revocation, services, session_services, token_cache
from partners.models import PartnerCredential, TokenSession
from tests.conftest import assert_error, issue_token, make_partner

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_watch():
    revocation.revocation_watch.reset()
    yield
    revocation.revocation_watch.reset()


@pytest.fixture
def staff_client(client, db):
    user = get_user_model().objects.create_superuser("staff", "staff@buyback.example", "pw-for-tests-only")
    client.force_login(user)
    return client


def _events(client, token: str):
    return client.get("/v1/events", HTTP_AUTHORIZATION=f"Bearer {token}")


def _pending_ids() -> list[str]:
    return [p.session_id for p in token_cache.sessions_pending()]


def _redis_lost() -> None:
    """Everything Redis held is gone (FLUSHDB): states, pending sessions, counters; and this process starts
    afresh, as a restarted one would."""
    cache.clear()
    revocation.revocation_watch.reset()


def test_a_token_request_writes_no_row_the_writer_does(api_client, partner_creds):
    assert _events(api_client, issue_token(api_client, partner_creds)).status_code == 200  # warm: watch, page
    session_services.token_sessions_flush()
    token = issue_token(api_client, partner_creds)
    assert TokenSession.objects.count() == 1  # the first token's only
    assert len(_pending_ids()) == 1
    # Used before its row exists, and without a query: its state is in Redis.
    with CaptureQueriesContext(connection) as queries:
        assert _events(api_client, token).status_code == 200
    assert len(queries) == 0, [q["sql"] for q in queries]

    assert session_services.token_sessions_flush() == 1
    session = TokenSession.objects.latest("created_at")
    assert session.partner == partner_creds.partner and session.livemode is True
    assert session.revoked_at is None and session.client_ip == "127.0.0.1"
    assert session.scope == services.GRANTED_SCOPE
    assert (session.expires_at - session.created_at).total_seconds() == pytest.approx(3600, abs=1)
    assert _pending_ids() == []
    assert session_services.token_sessions_flush() == 0
    assert _events(api_client, token).status_code == 200


def test_the_writer_copies_many_sessions_in_one_transaction(api_client, partner_creds, other_partner_creds):
    for creds in (partner_creds, other_partner_creds) * 5:
        issue_token(api_client, creds)
    with CaptureQueriesContext(connection) as queries:
        assert session_services.token_sessions_flush() == 10
    # The lock on the credentials the batch was issued under, and one INSERT (the test's savepoints aside).
    statements = [q["sql"] for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 2, statements
    assert TokenSession.objects.count() == 10


def test_a_writer_that_fails_leaves_the_sessions_pending(api_client, partner_creds, monkeypatch):
    token = issue_token(api_client, partner_creds)

    def broken(*args, **kwargs):
        raise RuntimeError("database went away mid-batch")

    monkeypatch.setattr(TokenSession.objects, "bulk_create", broken)
    with pytest.raises(RuntimeError):
        session_services.token_sessions_flush()
    monkeypatch.undo()
    assert len(_pending_ids()) == 1 and not TokenSession.objects.exists()
    assert session_services.token_sessions_flush() == 1  # the lock was released: the next run writes them
    assert _events(api_client, token).status_code == 200


def test_one_writer_at_a_time(api_client, partner_creds):
    issue_token(api_client, partner_creds)
    held = token_cache.pending_list.lock_take()
    try:
        assert session_services.token_sessions_flush() == 0  # another writer holds the list
    finally:
        token_cache.pending_list.lock_release(held)
    assert session_services.token_sessions_flush() == 1


def test_rotation_revokes_a_session_not_yet_written(api_client, partner_creds):
    token = issue_token(api_client, partner_creds)
    assert not TokenSession.objects.exists()
    services.credentials_rotate(partner=partner_creds.partner)
    assert_error(_events(api_client, token), 401, "UNAUTHORIZED")
    # The rotation wrote the pending session, revoked: staff see it without waiting for the writer.
    row = TokenSession.objects.get()
    assert row.revoked_at is not None and row.revoked_reason == "credentials rotated"
    session_services.token_sessions_flush()  # the writer's later copy changes nothing
    assert TokenSession.objects.get().revoked_at == row.revoked_at
    assert_error(_events(api_client, token), 401, "UNAUTHORIZED")


def test_rotating_the_test_pair_leaves_pending_live_tokens_working(api_client, partner_creds):
    live = issue_token(api_client, partner_creds)
    services.credentials_rotate(partner=partner_creds.partner, livemode=False)
    assert _events(api_client, live).status_code == 200
    _redis_lost()
    assert _events(api_client, live).status_code == 200


def test_suspension_and_reactivation_with_a_session_not_yet_written(api_client, partner_creds):
    token = issue_token(api_client, partner_creds)
    partner = services.partner_suspend(partner=partner_creds.partner, reason="unpaid invoices")
    assert_error(_events(api_client, token), 403, "ACCOUNT_SUSPENDED")
    services.partner_reactivate(partner=partner)
    # Tokens from before the suspension stay dead, even after Redis forgets everything.
    assert_error(_events(api_client, token), 401, "UNAUTHORIZED")
    _redis_lost()
    assert_error(_events(api_client, token), 401, "UNAUTHORIZED")


def test_a_revocation_that_could_not_reach_redis_holds_within_the_poll(
    api_client, partner_creds, settings, monkeypatch
):
    """Redis did not answer the rotation at all: neither the pending session nor its state could be
    touched. The generation, moved on in the database, refuses the token on the watch's next look."""
    settings.TOKEN_REVOCATION_POLL_SECONDS = 0.5
    token = issue_token(api_client, partner_creds)
    assert _events(api_client, token).status_code == 200  # the watch's first look is done

    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr("partners.session_services.sessions_pending", down)
    monkeypatch.setattr(cache, "set_many", down)
    services.credentials_rotate(partner=partner_creds.partner)
    monkeypatch.undo()
    token_cache.cache_health.take()  # this process is not the one that saw the failure
    assert not TokenSession.objects.exists()  # nothing of the session reached the database
    time.sleep(0.6)
    assert_error(_events(api_client, token), 401, "UNAUTHORIZED")
    # The writer copies it later, revoked: its generation is older than the credential's.
    assert session_services.token_sessions_flush() == 1
    row = TokenSession.objects.get()
    assert row.revoked_at is not None and row.revoked_reason == "credentials rotated or partner suspended"


def test_redis_lost_before_the_writer_ran(api_client, partner_creds, other_partner_creds, monkeypatch):
    """FLUSHDB mid-way: live tokens keep working (their sessions are re-created from the tokens), revoked
    ones stay refused (the revocation is in PostgreSQL), and nothing is re-created for them."""
    kept = issue_token(api_client, partner_creds)
    written = issue_token(api_client, partner_creds)
    session_services.token_sessions_flush()
    late = issue_token(api_client, partner_creds)  # still pending when Redis is lost
    revoked = issue_token(api_client, other_partner_creds)
    monkeypatch.setattr(
        "partners.session_services.sessions_pending", lambda **kw: (_ for _ in ()).throw(ConnectionError())
    )
    services.credentials_rotate(partner=other_partner_creds.partner)  # Redis missed it entirely
    monkeypatch.undo()
    rotated_creds = PartnerCredential.objects.get(partner=other_partner_creds.partner)
    assert rotated_creds.token_generation == 2
    assert TokenSession.objects.filter(partner=other_partner_creds.partner).count() == 0

    _redis_lost()
    assert _pending_ids() == []

    for token in (kept, written, late):
        assert _events(api_client, token).status_code == 200, token
    assert_error(_events(api_client, revoked), 401, "UNAUTHORIZED")
    assert TokenSession.objects.filter(partner=partner_creds.partner, revoked_at__isnull=True).count() == 3
    assert not TokenSession.objects.filter(partner=other_partner_creds.partner).exists()
    # A re-created session is an ordinary one: a rotation revokes it at once.
    services.credentials_rotate(partner=partner_creds.partner)
    assert_error(_events(api_client, late), 401, "UNAUTHORIZED")


def test_redis_lost_with_a_partner_suspended_meanwhile(api_client, db):
    creds = make_partner(name="Lapsed Resale")
    token = issue_token(api_client, creds)
    services.partner_suspend(partner=creds.partner)
    _redis_lost()
    assert_error(_events(api_client, token), 403, "ACCOUNT_SUSPENDED")


def test_redis_down_at_issue_writes_the_row_at_once(api_client, partner_creds, monkeypatch):
    def down(session):
        raise ConnectionError("redis down")

    monkeypatch.setattr("partners.session_services.session_pending_add", down)
    token = issue_token(api_client, partner_creds)
    monkeypatch.undo()
    assert TokenSession.objects.filter(partner=partner_creds.partner).count() == 1
    assert _events(api_client, token).status_code == 200


def test_the_admin_lists_sessions_still_in_redis(staff_client, api_client, partner_creds):
    issue_token(api_client, partner_creds)
    page = staff_client.get("/admin/partners/tokensession/")
    assert page.status_code == 200
    session_id = TokenSession.objects.get().session_id
    assert session_id in page.content.decode()
    partner_page = staff_client.get(f"/admin/partners/partner/{partner_creds.partner.pk}/change/")
    assert session_id in partner_page.content.decode()


def test_the_revocations_publish_covers_sessions_still_pending(api_client, partner_creds, monkeypatch):
    """A rotation Redis missed leaves a pending session's cached "active": the process that saw the failure
    (or beat, every minute) re-publishes it revoked, before the writer has copied it."""
    token = issue_token(api_client, partner_creds)
    assert _events(api_client, token).status_code == 200

    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr("partners.session_services.sessions_pending", down)
    monkeypatch.setattr(cache, "set_many", down)
    services.credentials_rotate(partner=partner_creds.partner)
    monkeypatch.undo()
    assert token_cache.cache_health.take() is True
    token_cache.cache_health.failed()
    assert_error(_events(api_client, token), 401, "UNAUTHORIZED")  # recovery re-published it
    assert cache.get(token_cache.session_cache_key(_pending_ids()[0]))[0] == "revoked"


def test_the_beat_task_writes_a_burst_in_batches(api_client, partner_creds, monkeypatch):
    from partners.tasks import token_sessions_flush

    for _ in range(5):
        issue_token(api_client, partner_creds)
    monkeypatch.setattr(session_services, "FLUSH_BATCH", 2)
    monkeypatch.setattr(session_services.token_sessions_flush, "__kwdefaults__", {"limit": 2})
    assert token_sessions_flush() == 5
    assert TokenSession.objects.count() == 5 and _pending_ids() == []
