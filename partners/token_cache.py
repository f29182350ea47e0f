"""The shared cache's copy of token sessions and of partners' payment readiness: every write to it.

The database is the authority on sessions; the shared cache (Redis) holds a copy of each live session's
state. Revocations overwrite the copy at once. If the cache cannot be written (Redis down), a copy cached
before the outage could outlive the revocation, so every process that meets a cache failure re-publishes
the state of all revoked, unexpired sessions as soon as the cache answers again
(:func:`token_revocations_publish`), and a beat task does the same every minute for processes that never
serve another request. What still slips through is caught by ``partners.revocation``.

The reads that believe or refill these copies are in ``partners.selectors`` (:func:`session_state`).
"""

import logging
import threading
import uuid

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from .models import Partner, TokenSession

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
    """Overwrite the cached state of every revoked or suspended session that has not expired yet.

    Raises if the cache does not answer (the caller decides whether to try again later).
    """
    now = timezone.now()
    rows = list(
        TokenSession.objects.filter(expires_at__gt=now)
        .exclude(revoked_at__isnull=True, partner__status=Partner.Status.ACTIVE)
        .values_list("session_id", "expires_at", "partner_id", "partner__public_id", "partner__status")
    )
    session_states_cache(
        [
            (
                session_id,
                expires_at,
                SESSION_SUSPENDED if status != Partner.Status.ACTIVE else SESSION_REVOKED,
                pk,
                pid,
            )
            for session_id, expires_at, pk, pid, status in rows
        ],
        now=now,
    )
    return len(rows)


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


def session_cache_keys(*, session_id: str, partner_id: str) -> list[str]:
    """What an authenticated request reads from the shared cache: the session's state and its partner's
    payment readiness with the two versions that stamp it (:func:`readiness_stamp`)."""
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


def readiness_stamp(found: dict, partner_id: str) -> tuple[str, str]:
    return (found.get(READINESS_EPOCH_KEY, "0"), found.get(readiness_version_key(partner_id), "0"))


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
