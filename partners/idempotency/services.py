"""Claiming, finishing, releasing and purging idempotency keys (docs/partners/idempotency.md "Retries and Idempotency-Key").

Who runs is decided by the database: the INSERT of the key row, arbitrated by its unique constraint, or a
conditional UPDATE on the holder's ``claim_token`` when an expired record or a lapsed lease is taken over.
Nothing here reads and then writes on the strength of the read alone.
"""

import json
import logging
import os
import secrets
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from config.api import errors
from config.api.idempotency import RETENTION_HOURS, carries_secret
from config.core.keys import seal, unseal
from config.core.purge import delete_in_batches

from .models import IdempotencyKey

logger = logging.getLogger(__name__)
RETENTION = timedelta(hours=RETENTION_HOURS)
# A few rounds are enough: each lost round means another request just changed the row, and the next read
# sees what it did. Past them the client is told to retry in a second, like any in-flight key.
_CLAIM_ROUNDS = 4


@dataclass(frozen=True)
class Claim:
    """This request holds the key: it runs, then stores its answer or releases the key."""

    pk: int
    token: str


@dataclass(frozen=True)
class StoredAnswer:
    status: int
    payload: dict[str, Any]


def _lease() -> timedelta:
    return timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS)


# --- Answers that carry a secret are sealed at rest -------------------------------------------------------
# A webhook endpoint's signing secret (create, rotate) is shown once; its stored answer, replayed for 24 hours,
# is sealed with AES-GCM under a key derived from SECRET_KEY (SECRET_KEY_FALLBACKS still open it), like the
# endpoint's own copy of the secret. Other answers are stored as they are.
_SEALED_FIELD = "sealed"
_SEAL_PURPOSE = "idempotent answer v1"


def _aad(pk: int) -> bytes:
    # Bound to its row: a sealed answer copied into another key's row does not open there.
    return f"idempotency-key:{pk}".encode()


def _stored_body(*, pk: int, payload: dict[str, Any]) -> dict[str, Any]:
    if not carries_secret(payload):
        return payload
    plaintext = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return {_SEALED_FIELD: seal(plaintext, purpose=_SEAL_PURPOSE, aad=_aad(pk))}


def _answer_payload(record: IdempotencyKey) -> dict[str, Any]:
    body = record.response_body or {}
    if set(body) == {_SEALED_FIELD}:
        # ValueError (a 500, the key kept) if SECRET_KEY changed without the old key in SECRET_KEY_FALLBACKS.
        return json.loads(unseal(body[_SEALED_FIELD], purpose=_SEAL_PURPOSE, aad=_aad(record.pk)))
    return body


def _take_over(
    *, record: IdempotencyKey, fingerprint: str, method: str, path: str, fresh: bool
) -> Claim | None:
    now = timezone.now()
    token = secrets.token_hex(16)
    changes: dict[str, Any] = {
        "claim_token": token,
        "fingerprint": fingerprint,
        "method": method,
        "path": path,
        "locked_until": now + _lease(),
        "response_status": None,
        "response_body": None,
        "completed_at": None,
    }
    if fresh:
        changes["created_at"] = now  # a key past its 24 hours starts a new life
    # Conditional on the token read: of two requests taking over the same record, one updates a row.
    updated = IdempotencyKey.objects.filter(pk=record.pk, claim_token=record.claim_token).update(**changes)
    return Claim(pk=record.pk, token=token) if updated else None


def idempotency_key_claim(
    *, partner_pk: int, livemode: bool, key: str, fingerprint: str, method: str, path: str
) -> Claim | StoredAnswer:
    """Claim ``key`` for this request, or return the answer stored for it.

    Raises IDEMPOTENCY_KEY_MISMATCH when the key names another request (compared first, also while that one
    runs) and IDEMPOTENCY_KEY_IN_USE while the same request still runs under a live lease.
    """
    scope = {"partner_id": partner_pk, "livemode": livemode, "key": key}
    for _ in range(_CLAIM_ROUNDS):
        now = timezone.now()
        token = secrets.token_hex(16)
        try:
            # Of concurrent requests with one key, the unique constraint lets exactly one INSERT through.
            with transaction.atomic():
                created = IdempotencyKey.objects.create(
                    **scope,
                    fingerprint=fingerprint,
                    method=method,
                    path=path,
                    claim_token=token,
                    created_at=now,
                    locked_until=now + _lease(),
                )
        except IntegrityError:
            pass  # the key exists: see what it holds
        else:
            return Claim(pk=created.pk, token=token)

        record = IdempotencyKey.objects.filter(**scope).first()
        if record is None:
            continue  # released (a 400, 5xx…) or purged since the INSERT failed: insert again
        if record.created_at <= now - RETENTION:
            claim = _take_over(record=record, fingerprint=fingerprint, method=method, path=path, fresh=True)
        elif record.fingerprint != fingerprint:
            raise errors.IdempotencyKeyMismatch(details={"idempotency_key": key})
        elif record.response_status is not None:
            return StoredAnswer(status=record.response_status, payload=_answer_payload(record))
        elif record.locked_until is not None and record.locked_until > now:
            raise errors.IdempotencyKeyInUse(details={"idempotency_key": key})
        else:
            # The lease lapsed without an answer: the first request's process died mid-flight.
            logger.warning("idempotency key %r: lease lapsed without an answer; claimed again", key)
            claim = _take_over(record=record, fingerprint=fingerprint, method=method, path=path, fresh=False)
        if claim is not None:
            return claim
    raise errors.IdempotencyKeyInUse(details={"idempotency_key": key})


def idempotency_key_finish(*, claim: Claim, status: int, payload: dict[str, Any]) -> bool:
    """Store the answer for replay. False if this request no longer held the key (its lease was taken over)."""
    updated = IdempotencyKey.objects.filter(pk=claim.pk, claim_token=claim.token).update(
        response_status=status,
        response_body=_stored_body(pk=claim.pk, payload=payload),
        completed_at=timezone.now(),
        locked_until=None,
    )
    if not updated:
        logger.warning("idempotency key lost before its answer was stored (lease taken over)")
    return bool(updated)


def idempotency_keys_renew(*, claims: list[Claim]) -> int:
    """Push the leases of all these running requests one lease ahead, in one statement. Returns how many
    were still held (answered, released or taken-over keys are left alone)."""
    if not claims:
        return 0
    return IdempotencyKey.objects.filter(
        pk__in=[c.pk for c in claims],
        claim_token__in=[c.token for c in claims],  # tokens are random per request: pk and token pair up
        response_status__isnull=True,
    ).update(locked_until=timezone.now() + _lease())


class LeaseKeeper:
    """Renews the leases of every claim this process holds, every third of the lease, from one thread.

    gunicorn's gthread workers give a request no time limit and nginx gives up on it after 60 s (a 503 that a
    client retries), so a fixed lease could lapse under a request that still runs, and the retry would run it
    a second time. Renewed, the lease lasts exactly as long as the request: a retry gets 409 until the answer
    is stored. If the process dies, the renewals stop with it and the key is free one lease later.

    One keeper per process (:data:`lease_keeper`), started with the first claim (and again in a forked child):
    a request hands its claim over (:meth:`hold`) and takes it back when it answers (:meth:`let_go`); each
    round renews all the claims held in one UPDATE. Idle, it waits without waking and holds no connection.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._claims: set[Claim] = set()
        self._pid: int | None = None
        self._thread: threading.Thread | None = None
        self.rounds = 0  # renewal rounds run, for the tests and the curious

    def held(self) -> set[Claim]:
        with self._lock:
            return set(self._claims)

    def hold(self, claim: Claim) -> None:
        with self._lock:
            idle = not self._claims
            self._claims.add(claim)
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="idempotency-lease", daemon=True)
                self._thread.start()
            elif idle:
                self._lock.notify_all()  # the keeper waits for a first claim: its round starts now

    def let_go(self, claim: Claim) -> None:
        with self._lock:
            self._claims.discard(claim)

    def _next_round(self) -> list[Claim]:
        """Wait a third of the lease while claims are held (forever while none are); the claims to renew."""
        with self._lock:
            while not self._claims:
                connections.close_all()  # idle: this thread holds no connection
                self._lock.wait()
            self._lock.wait(max(settings.IDEMPOTENCY_LEASE_SECONDS / 3, 0.05))
            return list(self._claims)

    def _run(self) -> None:
        while True:
            claims = self._next_round()
            if not claims:
                continue
            try:
                idempotency_keys_renew(claims=claims)
            except Exception:
                logger.exception("could not renew the leases of %d idempotency keys", len(claims))
                connections.close_all()  # a broken connection is replaced on the next round
            self.rounds += 1


lease_keeper = LeaseKeeper()


def idempotency_key_release(*, claim: Claim) -> None:
    """Free the key (the answer is not kept): a corrected retry with the same key runs again."""
    IdempotencyKey.objects.filter(pk=claim.pk, claim_token=claim.token).delete()


def idempotency_key_purge_expired(*, batch_size: int = 1000) -> int:
    """Delete keys older than 24 hours, ``batch_size`` at a time (short transactions, short locks)."""
    cutoff = timezone.now() - RETENTION
    # Re-checked in the DELETE: a key taken over (fresh created_at) since the SELECT is kept.
    deleted = delete_in_batches(
        IdempotencyKey.objects.filter(created_at__lte=cutoff).order_by("created_at", "id"),
        batch_size=batch_size,
        recheck=Q(created_at__lte=cutoff),
    )
    if deleted:
        logger.info("purged %d idempotency keys older than %d hours", deleted, RETENTION_HOURS)
    return deleted
