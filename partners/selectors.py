"""Reads of partner state. Token-session state is cached so a warm token costs no database query.

The copies in the shared cache and every write to them are in ``partners.token_cache``; the per-process
look at the latest revocations, which decides a session whatever the cache says, in ``partners.revocation``.
"""

import logging
from dataclasses import dataclass, field

from django.core.cache import cache
from django.utils import timezone

from config.core import rawsql

from . import token_cache
from .models import Partner, PartnerCredential, PartnerTestCredential, PortalUser, TokenSession
from .revocation import revocation_watch
from .token_cache import SESSION_ACTIVE, SESSION_REVOKED, SESSION_SUSPENDED, SESSION_UNKNOWN

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionState:
    state: str
    partner_pk: int | None = None
    partner_id: str | None = None
    # The partner's payment readiness, when known without another query (see session_payment_readiness).
    readiness: "PaymentReadiness | None" = None
    readiness_stamp: tuple[str, str] | None = None


def session_state(
    *,
    session_id: str,
    ttl: int,
    partner_id: str | None = None,
    found: dict | None = None,
    read: bool = True,
    livemode: bool = True,
    generation: int | None = None,
    with_readiness: bool = True,
) -> SessionState:
    """State of a token session, with its partner's payment readiness when the cache holds a current copy.

    ``found``: the entries of :func:`token_cache.session_cache_keys` the caller already read (one pipelined
    round trip with the rate-limit count, after :func:`token_cache.cache_recover`); ``read=False`` with
    ``found=None`` means the cache did not answer. Without either, the cache is read here. On a miss the
    database answers (one query, readiness included) and the answer is cached. ``with_readiness=False`` (a request
    that never checks it: ``found`` then holds no readiness entries) leaves the readiness copy unread and
    unwritten; a state read from the database still carries it. If the cache does not answer,
    the database decides: slower, never wrong. A session this process has seen revoked in the database
    (``partners.revocation``) is decided by the database too, so a stale "active" left in the cache by a
    revocation the cache missed is never believed; so is a token signed under an older ``generation`` of its
    credential than the one this process last read. A session the database does not hold either (still
    pending in Redis, or lost with it) is ``SESSION_UNKNOWN``: the caller may re-create it from its token
    (``partners.session_services.token_session_restore``).
    """
    if read:
        token_cache.cache_recover()
    if found is None and read:
        try:
            found = cache.get_many(
                token_cache.session_cache_keys(
                    session_id=session_id, partner_id=partner_id or "", with_readiness=with_readiness
                )
            )
        except Exception:
            found = None
    if found is None:
        logger.warning("token cache unreachable; reading session state from the database")
        token_cache.cache_health.failed()
        ttl = 0
        found = {}
    stamp = token_cache.readiness_stamp(found, partner_id) if partner_id and with_readiness else None
    decided_by_database = revocation_watch.decides(
        session_id, partner_id=partner_id, livemode=livemode, generation=generation
    )
    cached = None if decided_by_database else found.get(token_cache.session_cache_key(session_id))
    if cached is not None:
        readiness = None
        entry = found.get(token_cache.readiness_cache_key(partner_id)) if stamp is not None else None
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
        elif revoked_at is not None or (
            decided_by_database
            and revocation_watch.superseded(partner_id=public_id, livemode=livemode, generation=generation)
        ):
            value = SESSION_REVOKED
        else:
            value = SESSION_ACTIVE
        readiness = _readiness(payout_id, card_id)
        state = SessionState(value, partner_pk, public_id, readiness=readiness)
        if ttl > 0 and public_id == partner_id:
            token_cache.readiness_cache(public_id, stamp, readiness.missing)
    if ttl > 0:
        token_cache.session_state_cache(
            session_id=session_id, entry=(state.state, state.partner_pk, state.partner_id), ttl=ttl
        )
    return state


@dataclass(frozen=True)
class CredentialCheck:
    """What the token endpoint needs of a credential, read in one small query."""

    secret_digest: str
    partner_pk: int
    partner_id: str
    partner_status: str
    token_generation: int
    livemode: bool = True
    cached: bool = False  # read from the shared cache's copy (partners.token_cache), not the database


_CREDENTIAL_QUERIES = {
    livemode: rawsql.Select(
        f"""
    SELECT c.secret_digest, c.partner_id, p.public_id, p.status, c.token_generation
      FROM {model._meta.db_table} c
      JOIN {Partner._meta.db_table} p ON p.id = c.partner_id
     WHERE c.client_id = %s
     LIMIT 1
""",  # noqa: S608 - table names from the models, the value as a parameter
        [model._meta.get_field("secret_digest"), model._meta.get_field("partner")]
        + [Partner._meta.get_field("public_id"), Partner._meta.get_field("status")]
        + [model._meta.get_field("token_generation")],
    )
    for livemode, model in ((True, PartnerCredential), (False, PartnerTestCredential))
}


def credential_for_token(*, client_id: str, found: dict | None = None) -> CredentialCheck | None:
    """The credential a client_id names. ``found``: the entries of :func:`token_cache.credential_cache_keys`
    the token endpoint read in its round trip; a current copy there answers without a query (``cached``
    is then true: a refusal based on it must be checked again without ``found``). ``None`` reads the
    database, as does a copy whose generation the revocation watch knows to be old."""
    if found is not None:
        values, stamp = token_cache.credential_copy(found, client_id)
        if values is not None:
            check = CredentialCheck(*values, cached=True)
            if revocation_watch.generation_current(
                partner_id=check.partner_id, livemode=check.livemode, generation=check.token_generation
            ):
                return check
    # A test pair's client_id starts with cli_test_ (a live one never does: its random part has no "_").
    livemode = not client_id.startswith("cli_test_")
    # Plain SQL: the endpoint's hottest query, where compiling the ORM's join cost more than running it.
    row = _CREDENTIAL_QUERIES[livemode].fetchone([client_id])
    if row is None:
        return None
    check = CredentialCheck(*row, livemode=livemode)
    if found is not None:
        token_cache.credential_cache(client_id, stamp, (*row, livemode))
    return check


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


def session_payment_readiness(*, state: "SessionState") -> PaymentReadiness:
    """The partner's payment readiness: the copy the session's round trip found current, else the database
    (and the copy is renewed under the stamp read before this query)."""
    if state.readiness is not None:
        return state.readiness
    readiness = payment_readiness(partner_pk=state.partner_pk)
    token_cache.readiness_cache(state.partner_id, state.readiness_stamp, readiness.missing)
    return readiness
