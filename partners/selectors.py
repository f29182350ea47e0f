"""Reads of partner state. Token-session state is cached so a warm token costs no database query."""

import logging
from dataclasses import dataclass

from django.core.cache import cache

from .models import Partner, PartnerCredential, TokenSession

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


def session_cache_key(session_id: str) -> str:
    return f"tks:{session_id}"


def session_state(*, session_id: str, ttl: int) -> SessionState:
    """State of a token session: cached (shared cache) and read from the database on a miss.

    If the cache does not answer, the database decides: slower, never wrong.
    """
    key = session_cache_key(session_id)
    try:
        cached = cache.get(key)
    except Exception:
        logger.warning("token cache unreachable; reading session state from the database")
        cached = None
        ttl = 0
    if cached is not None:
        return SessionState(*cached)
    row = (
        TokenSession.objects.filter(session_id=session_id)
        .values_list("revoked_at", "partner_id", "partner__public_id", "partner__status")
        .first()
    )
    if row is None:
        state = SessionState(SESSION_UNKNOWN)
    else:
        revoked_at, partner_pk, partner_id, status = row
        if status != Partner.Status.ACTIVE:
            value = SESSION_SUSPENDED
        elif revoked_at is not None:
            value = SESSION_REVOKED
        else:
            value = SESSION_ACTIVE
        state = SessionState(value, partner_pk, partner_id)
    if ttl > 0:
        try:
            cache.set(key, (state.state, state.partner_pk, state.partner_id), timeout=ttl)
        except Exception:
            logger.warning("token cache unreachable; session state not cached")
    return state


def credential_get_by_client_id(*, client_id: str) -> PartnerCredential | None:
    return PartnerCredential.objects.select_related("partner").filter(client_id=client_id).first()
