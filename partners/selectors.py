"""Reads of partner state. Token-session state is cached so a warm token costs no database query.

The database is the authority on sessions; the shared cache (Redis) holds a copy of each live session's
state. Revocations overwrite the copy at once. If the cache cannot be written (Redis down), a copy cached
before the outage could outlive the revocation, so every process that meets a cache failure re-publishes
the state of all revoked, unexpired sessions as soon as the cache answers again
(:func:`token_revocations_publish`), and a beat task does the same every minute for processes that never
serve another request.

That repair can come too late for a process that did not see the outage: it keeps reading "active" from
the cache until someone re-publishes. So each process also reads, at most every
``TOKEN_REVOCATION_POLL_SECONDS`` (2 s), the sessions revoked in the database since its last look (one
indexed query, :class:`RevocationWatch`), and a session found there is decided by the database whatever
the cache says: a revocation takes effect on every process within that interval (plus the time its
transaction takes to commit), even if the cache was unreachable when it was made.
"""

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, transaction
from django.utils import timezone

from config.core import rawsql

from .models import Partner, PartnerCredential, PartnerTestCredential, PortalUser, TokenSession

logger = logging.getLogger(__name__)

SESSION_ACTIVE = "active"
SESSION_REVOKED = "revoked"
SESSION_SUSPENDED = "suspended"
SESSION_UNKNOWN = "unknown"


@dataclass(frozen=True)
class SessionState:
    state: str
    partner_pk: int | None = None
    partner_id: str | None = None
    # The partner's payment readiness, when known without another query (see session_payment_readiness).
    readiness: "PaymentReadiness | None" = None
    readiness_stamp: tuple[str, str] | None = None


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
    _recover_after_cache_failure()


def _recover_after_cache_failure() -> None:
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


class RevocationWatch:
    """Per process: the unexpired sessions revoked in the database, refreshed at most every
    ``TOKEN_REVOCATION_POLL_SECONDS`` by the request that finds the list older than that.

    The first look reads every revocation of the last ``ACCESS_TOKEN_TTL_SECONDS`` (older ones belong to
    expired sessions); later looks read those since the previous look, less ``OVERLAP`` to cover
    transactions that committed late and clocks of other machines that run behind.
    """

    OVERLAP = timedelta(seconds=60)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._revoked: dict[str, float] = {}  # session_id -> its expiry (epoch seconds)
        self._checked_at: float | None = None  # time.monotonic() of the last successful look
        self._since = None

    def reset(self) -> None:
        with self._lock:
            self._revoked, self._checked_at, self._since = {}, None, None

    def is_revoked(self, session_id: str) -> bool:
        self._refresh()
        return session_id in self._revoked

    def _due(self) -> bool:
        interval = settings.TOKEN_REVOCATION_POLL_SECONDS
        return self._checked_at is None or time.monotonic() - self._checked_at >= interval

    def _refresh(self) -> None:
        if not self._due():
            return
        with self._lock:  # one thread looks; the others wait for its answer rather than all querying
            if not self._due():
                return
            started = timezone.now()
            since = self._since or started - timedelta(seconds=settings.ACCESS_TOKEN_TTL_SECONDS)
            try:
                rows = list(
                    TokenSession.objects.filter(revoked_at__gte=since, expires_at__gt=started).values_list(
                        "session_id", "expires_at"
                    )
                )
            except DatabaseError:
                # The database is the authority and does not answer: keep what is known and look again
                # on the next request (the request itself will most likely fail on the database too).
                logger.warning("could not read token revocations from the database", exc_info=True)
                return
            now = started.timestamp()
            self._revoked = {sid: exp for sid, exp in self._revoked.items() if exp > now}
            self._revoked.update((sid, expires_at.timestamp()) for sid, expires_at in rows)
            self._since = started - self.OVERLAP
            self._checked_at = time.monotonic()


revocation_watch = RevocationWatch()


def session_cache_keys(*, session_id: str, partner_id: str) -> list[str]:
    """What an authenticated request reads from the shared cache: the session's state and its partner's
    payment readiness with the two versions that stamp it (:func:`readiness_stamp`)."""
    return [
        session_cache_key(session_id),
        READINESS_EPOCH_KEY,
        readiness_version_key(partner_id),
        readiness_cache_key(partner_id),
    ]


def session_state(
    *, session_id: str, ttl: int, partner_id: str | None = None, found: dict | None = None, read: bool = True
) -> SessionState:
    """State of a token session, with its partner's payment readiness when the cache holds a current copy.

    ``found``: the entries of :func:`session_cache_keys` the caller already read (one pipelined round trip
    with the rate-limit count, after :func:`cache_recover`); ``read=False`` with ``found=None`` means the
    cache did not answer. Without
    either, the cache is read here. On a miss the database answers (one query, readiness included) and the
    answer is cached. If the cache does not answer, the database decides: slower, never wrong. A session
    this process has seen revoked in the database (:class:`RevocationWatch`) is decided by the database
    too, so a stale "active" left in the cache by a revocation the cache missed is never believed.
    """
    if read:
        _recover_after_cache_failure()
    key = session_cache_key(session_id)
    if found is None and read:
        try:
            found = cache.get_many(session_cache_keys(session_id=session_id, partner_id=partner_id or ""))
        except Exception:
            found = None
    if found is None:
        logger.warning("token cache unreachable; reading session state from the database")
        cache_health.failed()
        ttl = 0
        found = {}
    stamp = readiness_stamp(found, partner_id) if partner_id else None
    cached = None if revocation_watch.is_revoked(session_id) else found.get(key)
    if cached is not None:
        readiness = None
        entry = found.get(readiness_cache_key(partner_id)) if partner_id else None
        if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == stamp:
            readiness = PaymentReadiness(missing=list(entry[1]))
        return SessionState(*cached[:3], readiness=readiness, readiness_stamp=stamp if ttl > 0 else None)
    row = next(
        iter(
            TokenSession.objects.filter(session_id=session_id)
            .order_by()
            .values_list(
                "revoked_at",
                "partner_id",
                "partner__public_id",
                "partner__status",
                "partner__payout_account__id",
                "partner__credit_card__id",
            )[:1]
        ),
        None,
    )
    if row is None:
        state = SessionState(SESSION_UNKNOWN)
    else:
        revoked_at, partner_pk, public_id, status, payout_id, card_id = row
        if status != Partner.Status.ACTIVE:
            value = SESSION_SUSPENDED
        elif revoked_at is not None:
            value = SESSION_REVOKED
        else:
            value = SESSION_ACTIVE
        readiness = _readiness(payout_id, card_id)
        state = SessionState(value, partner_pk, public_id, readiness=readiness)
        if ttl > 0 and public_id == partner_id:
            _readiness_cache(public_id, stamp, readiness)
    if ttl > 0:
        try:
            cache.set(key, (state.state, state.partner_pk, state.partner_id), timeout=ttl)
        except Exception:
            logger.warning("token cache unreachable; session state not cached")
            cache_health.failed()
    return state


@dataclass(frozen=True)
class CredentialCheck:
    """What the token endpoint needs of a credential, read in one small query."""

    secret_digest: str
    partner_pk: int
    partner_id: str
    partner_status: str
    livemode: bool = True


_CREDENTIAL_QUERIES = {
    livemode: rawsql.Select(
        f"""
    SELECT c.secret_digest, c.partner_id, p.public_id, p.status
      FROM {model._meta.db_table} c
      JOIN {Partner._meta.db_table} p ON p.id = c.partner_id
     WHERE c.client_id = %s
     LIMIT 1
""",  # noqa: S608 - table names from the models, the value as a parameter
        [model._meta.get_field("secret_digest"), model._meta.get_field("partner")]
        + [Partner._meta.get_field("public_id"), Partner._meta.get_field("status")],
    )
    for livemode, model in ((True, PartnerCredential), (False, PartnerTestCredential))
}


def credential_for_token(*, client_id: str) -> CredentialCheck | None:
    # A test pair's client_id starts with cli_test_ (a live one never does: its random part has no "_").
    livemode = not client_id.startswith("cli_test_")
    # Plain SQL: the endpoint's hottest query, where compiling the ORM's join cost more than running it.
    row = _CREDENTIAL_QUERIES[livemode].fetchone([client_id])
    return CredentialCheck(*row, livemode=livemode) if row is not None else None


# The partner's payment set-up: the payouts app owns the two methods, the partner row names them through
# its reverse relations, so the permission every quote and order runs needs no import of payouts.
@dataclass(frozen=True)
class PaymentReadiness:
    """What a partner still has to set up before quotes and orders are accepted (docs/partners/catalog-and-quotes.md "Quotes")."""

    missing: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.missing


def _readiness(payout_id: int | None, card_id: int | None) -> PaymentReadiness:
    missing = []
    if payout_id is None:
        missing.append("payout_method")
    if card_id is None:
        missing.append("credit_card")
    return PaymentReadiness(missing=missing)


def payment_readiness(*, partner_pk: int) -> PaymentReadiness:
    """One query: does the partner have a payout method and a credit card on file?"""
    # A slice, not .first(): no ORDER BY on a query every quote and order runs.
    rows = Partner.objects.filter(pk=partner_pk).values_list("payout_account__id", "credit_card__id")[:1]
    row = next(iter(rows), None)
    if row is None:
        return PaymentReadiness(missing=["payout_method", "credit_card"])
    return _readiness(*row)


def credential_of_partner(*, partner_pk: int) -> PartnerCredential | None:
    """The partner's API credentials (the secret only as its digest and last 4)."""
    return PartnerCredential.objects.filter(partner_id=partner_pk).first()


def test_credential_of_partner(*, partner_pk: int) -> PartnerTestCredential | None:
    """The partner's test-mode API credentials (the secret only as its digest and last 4)."""
    return PartnerTestCredential.objects.filter(partner_id=partner_pk).first()


def token_sessions_live_count(*, partner_pk: int, livemode: bool = True) -> int:
    """Bearer tokens of the partner, of one mode, that are neither revoked nor expired."""
    return TokenSession.objects.filter(
        partner_id=partner_pk, livemode=livemode, revoked_at__isnull=True, expires_at__gt=timezone.now()
    ).count()


def portal_profile_of_user(*, user_pk: int) -> PortalUser | None:
    """The portal profile (and its partner) of a signed-in user; ``None`` for a user without portal access."""
    return PortalUser.objects.select_related("partner").filter(user_id=user_pk).first()


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


def _readiness_cache(partner_id: str, stamp: tuple[str, str] | None, readiness: PaymentReadiness) -> None:
    if stamp is None:
        return
    try:
        cache.set(readiness_cache_key(partner_id), (stamp, tuple(readiness.missing)), READINESS_SECONDS)
    except Exception:
        logger.warning("token cache unreachable; payment readiness not cached")


def session_payment_readiness(*, state: "SessionState") -> PaymentReadiness:
    """The partner's payment readiness: the copy the session's round trip found current, else the database
    (and the copy is renewed under the stamp read before this query)."""
    if state.readiness is not None:
        return state.readiness
    readiness = payment_readiness(partner_pk=state.partner_pk)
    _readiness_cache(state.partner_id, state.readiness_stamp, readiness)
    return readiness


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
