"""Every write of token sessions on their way from Redis to PostgreSQL: a session created in Redis (or in
the database without it), the batched writer, the generation a revocation moves on, and a session re-created
from its token after Redis lost it (partners/token_cache.py holds the Redis side)."""

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config.core import rawsql
from config.core.pending import drain_all
from config.core.publish import publish

from . import tokens
from .models import Partner, PartnerCredential, PartnerTestCredential, TokenSession
from .token_cache import (
    SESSION_ACTIVE,
    SESSION_REVOKED,
    SESSION_SUSPENDED,
    SESSION_UNKNOWN,
    PendingSession,
    cache_health,
    pending_list,
    session_pending_add,
    sessions_pending,
)

logger = logging.getLogger(__name__)


def token_generation_advance(*, partner: Partner, livemode: bool | None) -> None:
    """Move the partner's credential(s) of that mode (both with ``None``) to a new token generation: every
    token signed before is revoked, its session written to the database or not (partners/tokens.py)."""
    now = timezone.now()
    for model in (PartnerCredential, PartnerTestCredential):
        if livemode is None or model.livemode == livemode:
            model.objects.filter(partner=partner).update(
                token_generation=F("token_generation") + 1, token_generation_at=now
            )


def pending_sessions_of(*, partner: Partner, livemode: bool | None) -> list[PendingSession]:
    """The partner's sessions still in Redis, not yet written to the database ([] if Redis does not answer:
    the generation, already moved on in the database, revokes them anyway)."""
    try:
        pending = sessions_pending()
    except Exception:
        logger.warning("token cache unreachable; pending token sessions revoked by their generation only")
        cache_health.failed()
        return []
    return [p for p in pending if p.partner_pk == partner.pk and (livemode is None or p.livemode == livemode)]


def session_rows(pending: list[PendingSession], *, revoked_at=None, reason: str = "") -> list[TokenSession]:
    return [
        TokenSession(
            session_id=p.session_id,
            partner_id=p.partner_pk,
            livemode=p.livemode,
            scope=p.scope,
            created_at=p.created_at,
            expires_at=p.expires_at,
            client_ip=p.client_ip,
            revoked_at=revoked_at,
            revoked_reason=reason if revoked_at else "",
        )
        for p in pending
    ]


# A burst that fills this many pending sessions asks for a flush at once rather than at the next beat.
FLUSH_AT_PENDING = 1000


def session_create(session: PendingSession) -> None:
    """Create the token session: in Redis, for the batched writer to copy to the database within
    ``TOKEN_SESSION_FLUSH_SECONDS``; in the database at once when Redis does not answer."""
    try:
        pending = session_pending_add(session)
    except Exception:
        logger.warning("token cache unreachable; token session written to the database")
        cache_health.failed()
    else:
        if pending % FLUSH_AT_PENDING == 0:
            publish("partners.tasks.token_sessions_flush")
        return
    rawsql.insert(session_rows([session])[0])


def current_generations(pending: list[PendingSession]) -> dict[tuple[int, bool], int]:
    """The current token generation of the credentials the pending sessions were issued under, each row
    locked until the caller's transaction ends."""
    current: dict[tuple[int, bool], int] = {}
    for model in (PartnerCredential, PartnerTestCredential):
        pks = {p.partner_pk for p in pending if p.livemode == model.livemode}
        if not pks:
            continue
        # Stops the race with a rotation or a suspension of these partners: it waits for this batch to commit
        # (its UPDATE then revokes these rows too), or this batch waits for it and reads its new generation.
        rows = (
            model.objects.select_for_update(no_key=True)
            .filter(partner_id__in=pks)
            .order_by("partner_id")
            .values_list("partner_id", "token_generation")
        )
        current.update(((pk, model.livemode), generation) for pk, generation in rows)
    return current


FLUSH_BATCH = 5000  # sessions a run of the writer copies in one transaction


def token_sessions_flush(*, limit: int = FLUSH_BATCH) -> int:
    """The batched writer: copy the oldest ``limit`` sessions of Redis's pending list to the database, in one
    transaction, then take them off the list; returns how many it took off.

    At least once: a writer that dies before trimming leaves them for the next run, whose insert skips
    those already written. A session whose credential's generation moved on meanwhile (rotation,
    suspension) is written revoked; one whose partner was deleted is dropped. Run by beat every
    ``TOKEN_SESSION_FLUSH_SECONDS`` and on demand, by whatever needs the rows (the admin's lists, the
    portal's counts)."""
    return pending_list.drain(_sessions_write, limit=limit)


def _sessions_write(pending: list[PendingSession]) -> None:
    with transaction.atomic():
        current = current_generations(pending)
        now = timezone.now()
        live = [p for p in pending if current.get((p.partner_pk, p.livemode), 0) == p.generation]
        stale = [p for p in pending if current.get((p.partner_pk, p.livemode), 0) > p.generation]
        rows = session_rows(live) + session_rows(
            stale, revoked_at=now, reason="credentials rotated or partner suspended"
        )
        TokenSession.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)


def token_sessions_flush_all(*, rounds: int = 20) -> int:
    """Batches of the writer one after another while they come full, so a burst is written by one run."""
    return drain_all(token_sessions_flush, batch=FLUSH_BATCH, rounds=rounds)


def token_session_restore(*, claims: tokens.TokenClaims) -> str:
    """Re-create the session of a well-signed, unexpired token that neither Redis nor the database knows
    (Redis lost it before the writer copied it): the token proves its partner, session, expiry and the
    credential generation it was issued under. Only if that generation is still the current one and the
    partner is active; returns the session's state (``SESSION_ACTIVE`` once the row is written)."""
    if claims.generation is None:
        return SESSION_UNKNOWN  # issued before tokens carried a generation: its row was written at issue
    model = PartnerCredential if claims.livemode else PartnerTestCredential
    with transaction.atomic():
        # The credential row locked: a rotation or suspension either finished before (generation moved on)
        # or waits for this row to be written (and then revokes it).
        row = (
            model.objects.select_for_update(no_key=True, of=("self",))
            .filter(partner__public_id=claims.partner_id)
            .values_list("partner_id", "partner__status", "token_generation")
            .first()
        )
        if row is None:
            return SESSION_UNKNOWN
        partner_pk, status, generation = row
        if status != Partner.Status.ACTIVE:
            return SESSION_SUSPENDED
        if generation != claims.generation:
            return SESSION_REVOKED
        expires_at = datetime.fromtimestamp(claims.expires_at, UTC)
        TokenSession.objects.bulk_create(
            [
                TokenSession(
                    session_id=claims.session_id,
                    partner_id=partner_pk,
                    livemode=claims.livemode,
                    scope=" ".join(s for s in tokens.SCOPES if s in claims.scopes),
                    created_at=expires_at - timedelta(seconds=settings.ACCESS_TOKEN_TTL_SECONDS),
                    expires_at=expires_at,
                )
            ],
            ignore_conflicts=True,
        )
    logger.info(
        "token session re-created from its token",
        extra={"partner_id": claims.partner_id, "livemode": claims.livemode},
    )
    return SESSION_ACTIVE
