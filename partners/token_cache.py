"""The shared cache's copy of token sessions and of partners' payment readiness: every write to it.

A token session is created here first: the token request writes
the session's state and appends the session to a pending list in one round trip, and the batched writer
(``partners.session_services.token_sessions_flush``, a beat entry every ``TOKEN_SESSION_FLUSH_SECONDS``) copies the
list to PostgreSQL. Nothing a partner was promised depends on Redis alone: the token proves its partner,
session, expiry and credential generation, so a session Redis lost before it was written is re-created from
the token on its first use (``partners.session_services.token_session_restore``); revocations are written to the
database (the credential's generation moves on, the sessions' rows are revoked, those still pending
included) before they are copied here.

The database is the authority on sessions; the shared cache (Redis) holds a copy of each live session's
state. Revocations overwrite the copy at once. If the cache cannot be written (Redis down), a copy cached
before the outage could outlive the revocation, so every process that meets a cache failure re-publishes
the state of all revoked, unexpired sessions as soon as the cache answers again
(:func:`token_revocations_publish`), and a beat task does the same every minute for processes that never
serve another request. What still slips through is caught by ``partners.revocation``.

The reads that believe or refill these copies are in ``partners.selectors`` (:func:`session_state`).
"""

import hashlib
import json
import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from config.api.ratelimit import pipelined
from config.core.pending import PendingList, redis_backend
from config.core.versions import version_or_fresh

from .models import Partner, PartnerCredential, PartnerTestCredential, TokenSession

logger = logging.getLogger(__name__)

SESSION_ACTIVE = "active"
SESSION_REVOKED = "revoked"
SESSION_SUSPENDED = "suspended"
SESSION_UNKNOWN = "unknown"


def session_cache_key(session_id: str) -> str:
    return f"tks:{session_id}"


class _CacheHealth:
    """Per process: did a cache operation fail since revocations were last published?"""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._suspect = False

    def failed(self) -> None:
        with self._lock:
            self._suspect = True

    def take(self) -> bool:
        with self._lock:
            suspect, self._suspect = self._suspect, False
            return suspect


cache_health = _CacheHealth()


def token_revocations_publish() -> int:
    """Overwrite the cached state of every revoked or suspended session that has not expired yet, those
    still waiting in Redis for the batched writer included.

    Raises if the cache does not answer (the caller decides whether to try again later).
    """
    now = timezone.now()
    rows = list(
        TokenSession.objects.filter(expires_at__gt=now)
        .exclude(revoked_at__isnull=True, partner__status=Partner.Status.ACTIVE)
        .values_list("session_id", "expires_at", "partner_id", "partner__public_id", "partner__status")
    )
    entries = [
        (
            session_id,
            expires_at,
            SESSION_SUSPENDED if status != Partner.Status.ACTIVE else SESSION_REVOKED,
            pk,
            pid,
        )
        for session_id, expires_at, pk, pid, status in rows
    ] + _pending_revoked(now=now)
    session_states_cache(entries, now=now)
    return len(entries)


def _pending_revoked(*, now) -> list[tuple]:
    """The sessions still waiting in Redis whose credential's generation moved on (a rotation or suspension
    that could not reach Redis): entries for :func:`session_states_cache`."""
    pending = [p for p in sessions_pending() if p.expires_at > now]
    current: dict[tuple[int, bool], tuple[int, str]] = {}
    for model in (PartnerCredential, PartnerTestCredential):
        pks = {p.partner_pk for p in pending if p.livemode == model.livemode}
        if pks:
            rows = model.objects.filter(partner_id__in=pks).values_list(
                "partner_id", "token_generation", "partner__status"
            )
            current.update(((pk, model.livemode), (generation, status)) for pk, generation, status in rows)
    entries = []
    for p in pending:
        generation, status = current.get((p.partner_pk, p.livemode), (p.generation, Partner.Status.ACTIVE))
        if generation > p.generation or status != Partner.Status.ACTIVE:
            state = SESSION_SUSPENDED if status != Partner.Status.ACTIVE else SESSION_REVOKED
            entries.append((p.session_id, p.expires_at, state, p.partner_pk, p.partner_id))
    return entries


def session_states_cache(entries: list[tuple], *, now=None) -> None:
    """Write ``(session_id, expires_at, state, partner_pk, partner_id)`` entries to the shared cache,
    each kept until its session expires. Raises if the cache does not answer."""
    now = now or timezone.now()
    by_ttl: dict[int, dict[str, tuple]] = {}
    for session_id, expires_at, state, partner_pk, partner_id in entries:
        ttl = max(1, int((expires_at - now).total_seconds()))
        # Round TTLs up to the minute so one set_many covers many sessions.
        by_ttl.setdefault(-(-ttl // 60) * 60, {})[session_cache_key(session_id)] = (
            state,
            partner_pk,
            partner_id,
        )
    for ttl, values in by_ttl.items():
        cache.set_many(values, timeout=ttl)


def cache_recover() -> None:
    """After a cache failure in this process: re-publish revocations before anything reads the cache."""
    if not cache_health.take():
        return
    try:
        count = token_revocations_publish()
        # A readiness change made while the cache was down could not void the copies made before it.
        cache.set(READINESS_EPOCH_KEY, uuid.uuid4().hex, timeout=None)
    except Exception:
        cache_health.failed()  # still down: try again on the next request
        return
    logger.info("shared cache answers again; re-published %d revoked token session(s)", count)


def session_state_cache(*, session_id: str, entry: tuple, ttl: int) -> None:
    """Keep ``(state, partner_pk, partner_id)`` of a session read from the database; a cache that does not
    answer is noted (its revocations are re-published once it answers again), never raised."""
    try:
        cache.set(session_cache_key(session_id), entry, timeout=ttl)
    except Exception:
        logger.warning("token cache unreachable; session state not cached")
        cache_health.failed()


def session_cache_keys(*, session_id: str, partner_id: str, with_readiness: bool = True) -> list[str]:
    """What an authenticated request reads from the shared cache: the session's state and, unless the request
    has no use for it (``with_readiness=False``: a catalog read), its partner's payment readiness with the two
    versions that stamp it (:func:`readiness_stamp`)."""
    if not with_readiness:
        return [session_cache_key(session_id)]
    return [
        session_cache_key(session_id),
        READINESS_EPOCH_KEY,
        readiness_version_key(partner_id),
        readiness_cache_key(partner_id),
    ]


# Payment readiness travels with the token session: every authenticated request reads the partner's copy
# in the round trip that reads the session's state, so quotes and orders check it without a query. A copy
# is stamped with two versions read *before* the database read it was made from: the partner's
# (``payment_readiness_changed`` replaces it when a payout method or card is saved or deleted, before and
# again after the commit) and a global epoch (replaced when this process finds the cache answering again
# after a failure). A copy is believed only while both versions are still the current ones: a change that
# commits after the copy's database read replaces a version afterwards, so the copy, however late it is
# written, is never current. No window is left between a change and the copies made before it.
READINESS_EPOCH_KEY = "rdy:epoch"
READINESS_SECONDS = 3600
READINESS_VERSION_SECONDS = 24 * 3600  # outlives every copy stamped with it (see catalog.cache)


def readiness_version_key(partner_id: str) -> str:
    return f"rdy:v:{partner_id}"


def readiness_cache_key(partner_id: str) -> str:
    return f"rdy:{partner_id}"


def _version(found: dict, key: str, timeout: int | None) -> str:
    """The version ``found`` holds, or a fresh one the cache keeps from now on (never a fixed default: a copy
    stamped with it before a change would be believed again once the change's version is lost)."""
    try:
        return version_or_fresh(found, key, timeout=timeout)
    except Exception:
        logger.warning("token cache unreachable; no copy is believed")
        return uuid.uuid4().hex  # a stamp no copy has


def readiness_stamp(found: dict, partner_id: str) -> tuple[str, str]:
    return (
        _version(found, READINESS_EPOCH_KEY, None),
        _version(found, readiness_version_key(partner_id), READINESS_VERSION_SECONDS),
    )


def readiness_cache(partner_id: str, stamp: tuple[str, str] | None, missing: list[str]) -> None:
    """Keep the partner's payment readiness under the stamp read before the database read it was made from."""
    if stamp is None:
        return
    try:
        cache.set(readiness_cache_key(partner_id), (stamp, tuple(missing)), READINESS_SECONDS)
    except Exception:
        logger.warning("token cache unreachable; payment readiness not cached")


def payment_readiness_changed(*, partner_pk: int) -> None:
    """A payout method or credit card of the partner was saved or deleted: its cached readiness is void.

    Called at once and again after the commit (``payouts`` connects it to its models' signals)."""
    partner_id = Partner.objects.filter(pk=partner_pk).values_list("public_id", flat=True).first()
    if partner_id is None:
        return

    def bump() -> None:
        try:
            cache.set(readiness_version_key(partner_id), uuid.uuid4().hex, READINESS_VERSION_SECONDS)
        except Exception:
            # Until the epoch is replaced (the next request of this process that finds the cache back),
            # a copy made before the change may still be believed; copies live READINESS_SECONDS at most.
            logger.warning("token cache unreachable; payment readiness of %s not invalidated", partner_id)
            cache_health.failed()

    bump()
    transaction.on_commit(bump)


# --- Credentials, for the token endpoint ----------------------------------------------------------------
# The token endpoint reads a copy of the credential (its secret's digest, partner, status and token
# generation) in the round trip that counts its rate limit, so a token request needs no query. A copy is
# stamped like the payment readiness above: with the client_id's version and the global epoch, both read
# *before* the database read it was made from, and believed only while both are current. A rotation, a
# suspension or a reactivation replaces the version at once and again after its commit. If Redis missed that,
# the revocation watch (partners.revocation) still knows within its interval that the credential's generation
# moved on, and the copy is not believed; a copy that refuses (wrong secret, suspended) is always checked
# against the database before the refusal is answered.
CREDENTIAL_SECONDS = 300


def _client_key(client_id: str) -> str:
    # client_id is whatever the caller sent: hashed, so that the cache key stays short and plain.
    return hashlib.blake2b(client_id.encode(), digest_size=12).hexdigest()


def credential_cache_keys(client_id: str) -> list[str]:
    """What the token endpoint reads for a client_id in its one round trip: the copy and its two versions."""
    key = _client_key(client_id)
    return [f"tkc:{key}", f"tkc:v:{key}", READINESS_EPOCH_KEY]


def credential_copy(found: dict, client_id: str) -> tuple[tuple | None, tuple[str, str]]:
    """The current copy's values (``None`` if absent or stale) and the stamp a new copy would carry."""
    copy_key, version_key, epoch_key = credential_cache_keys(client_id)
    stamp = (_version(found, epoch_key, None), _version(found, version_key, READINESS_VERSION_SECONDS))
    entry = found.get(copy_key)
    if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == stamp:
        return entry[1], stamp
    return None, stamp


def credential_cache(client_id: str, stamp: tuple[str, str], values: tuple) -> None:
    try:
        cache.set(credential_cache_keys(client_id)[0], (stamp, values), CREDENTIAL_SECONDS)
    except Exception:
        logger.warning("token cache unreachable; credential not cached")


def credentials_changed(*, client_ids: list[str]) -> None:
    """A credential's secret, generation or its partner's status changed: the copies of these client_ids are
    void. At once and again after the commit."""
    keys = [credential_cache_keys(client_id)[1] for client_id in client_ids]

    def bump() -> None:
        try:
            cache.set_many({key: uuid.uuid4().hex for key in keys}, READINESS_VERSION_SECONDS)
        except Exception:
            logger.warning("token cache unreachable; credential copies not invalidated")
            cache_health.failed()

    bump()
    transaction.on_commit(bump)


# --- Sessions kept in Redis first ----------------------------------------------------------------------
PENDING_KEY = "tks:pending"
FLUSH_LOCK_KEY = "tks:flush-lock"
FLUSH_LOCK_SECONDS = 30  # a writer that died holding it delays the next flush by this much, never loses one


@dataclass(frozen=True)
class PendingSession:
    """A token session issued but not yet written to the database, as the pending list holds it."""

    session_id: str
    partner_pk: int
    partner_id: str
    livemode: bool
    scope: str
    created_at: datetime
    expires_at: datetime
    client_ip: str | None
    generation: int

    def dumps(self) -> str:
        return json.dumps(
            [
                self.session_id,
                self.partner_pk,
                self.partner_id,
                self.livemode,
                self.scope,
                self.created_at.timestamp(),
                int(self.expires_at.timestamp()),
                self.client_ip,
                self.generation,
            ],
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, raw: bytes | str) -> "PendingSession":
        sid, pk, pid, live, scope, created, expires, ip, generation = json.loads(raw)
        return cls(
            session_id=sid,
            partner_pk=int(pk),
            partner_id=pid,
            livemode=bool(live),
            scope=scope,
            created_at=datetime.fromtimestamp(created, UTC),
            expires_at=datetime.fromtimestamp(expires, UTC),
            client_ip=ip,
            generation=int(generation),
        )


def session_pending_add(session: PendingSession) -> int:
    """Create ``session`` in Redis: its state ("active", read by every authenticated request) and its entry
    in the pending list, in one round trip. Returns the list's length. Raises if Redis does not answer."""
    backend = redis_backend()
    ttl = max(1, int((session.expires_at - session.created_at).total_seconds()))
    state_key = backend.make_and_validate_key(session_cache_key(session.session_id))
    state = backend._cache._serializer.dumps((SESSION_ACTIVE, session.partner_pk, session.partner_id))
    replies = pipelined(
        backend._cache.get_client(state_key, write=True),
        [
            ("SET", state_key, state, "EX", ttl),
            # A list nobody drains (no beat) ends with the sessions it holds: every one of them has expired.
            *pending_list.append_commands(backend, session.dumps(), ttl=settings.ACCESS_TOKEN_TTL_SECONDS),
        ],
    )
    return int(replies[1])


pending_list = PendingList(
    PENDING_KEY, lock_key=FLUSH_LOCK_KEY, loads=PendingSession.loads, lock_seconds=FLUSH_LOCK_SECONDS
)


def sessions_pending(*, limit: int = 0) -> list[PendingSession]:
    """The oldest ``limit`` pending sessions (all of them with 0). Raises if Redis does not answer."""
    return pending_list.read(limit=limit)
