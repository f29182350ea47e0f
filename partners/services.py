"""Every write on partners, credentials and token sessions."""

import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from config.api import errors
from config.core.statemachine import StateMachine

from . import tokens
from .models import (
    Partner,
    PartnerCredential,
    PartnerStatusHistory,
    PartnerTestCredential,
    TokenSession,
    new_session_id,
)
from .selectors import credential_for_token
from .session_services import pending_sessions_of, session_create, session_rows, token_generation_advance
from .token_cache import (
    SESSION_REVOKED,
    SESSION_SUSPENDED,
    PendingSession,
    cache_health,
    credentials_changed,
    session_cache_key,
    session_states_cache,
)

logger = logging.getLogger(__name__)

# The legal moves of ``Partner.status``; ``partner_transition`` is its one writer.
PARTNER_TRANSITIONS = {
    Partner.Status.ACTIVE: frozenset({Partner.Status.SUSPENDED}),
    Partner.Status.SUSPENDED: frozenset({Partner.Status.ACTIVE}),
}
PARTNER_MACHINE = StateMachine(
    name="partner",
    field="status",
    moves=PARTNER_TRANSITIONS,
    history=PartnerStatusHistory,
    history_fk="partner",
)

GRANTED_SCOPE = " ".join(tokens.SCOPES)
# Compared against when the client_id is unknown, so a wrong id costs the same time as a wrong secret.
_DUMMY_DIGEST = hashlib.sha256(b"no such client").hexdigest()


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_secret(*, livemode: bool = True) -> str:
    return ("sec_" if livemode else "sec_test_") + secrets.token_urlsafe(32)  # 32 random bytes


def _credential_model(livemode: bool) -> type[PartnerCredential] | type[PartnerTestCredential]:
    return PartnerCredential if livemode else PartnerTestCredential


@dataclass(frozen=True)
class IssuedCredentials:
    partner: Partner
    client_id: str
    client_secret: str  # shown once; never stored
    livemode: bool = True
    # The test-mode pair, issued with the live one at provisioning (docs/partners/test-mode.md "Test mode").
    test_client_id: str | None = None
    test_client_secret: str | None = None


@dataclass(frozen=True)
class IssuedToken:
    access_token: str
    expires_at: object
    expires_in: int
    scope: str
    session_id: str


@transaction.atomic
def partner_create(*, name: str, contact_email: str = "", suspended: bool = False) -> IssuedCredentials:
    partner = Partner.objects.create(
        name=name,
        contact_email=contact_email,
        status=Partner.Status.SUSPENDED if suspended else Partner.Status.ACTIVE,
    )
    if suspended:
        PARTNER_MACHINE.record(
            obj=partner, from_state="", to_state=partner.status, actor="system", reason="created suspended"
        )
    return credentials_issue(partner=partner)


@transaction.atomic
def credentials_issue(*, partner: Partner) -> IssuedCredentials:
    """First credentials for a partner (the admin's add form and ``create_partner``): the live pair and the
    test-mode pair, each secret shown once."""
    secret, test_secret = _new_secret(), _new_secret(livemode=False)
    credential = PartnerCredential.objects.create(
        partner=partner, secret_digest=_digest(secret), secret_last4=secret[-4:]
    )
    test_credential = PartnerTestCredential.objects.create(
        partner=partner, secret_digest=_digest(test_secret), secret_last4=test_secret[-4:]
    )
    return IssuedCredentials(
        partner=partner,
        client_id=credential.client_id,
        client_secret=secret,
        test_client_id=test_credential.client_id,
        test_client_secret=test_secret,
    )


@transaction.atomic
def credentials_rotate(*, partner: Partner, livemode: bool = True) -> IssuedCredentials:
    """Keep the client_id of the pair of that mode, replace its secret, revoke the partner's token sessions
    of that mode (rotating the test pair leaves live tokens working, and the other way round)."""
    model = _credential_model(livemode)
    # Lock the credential row: two concurrent rotations must not both think their secret is current.
    credential = model.objects.select_for_update().filter(partner=partner).first()
    secret = _new_secret(livemode=livemode)
    if credential is None:
        # A partner without this pair (none was provisioned for it): the rotation issues one.
        credential = model(partner=partner)
    credential.secret_digest = _digest(secret)
    credential.secret_last4 = secret[-4:]
    credential.rotated_at = timezone.now()
    credential.save()
    sessions_revoke(partner=partner, reason="credentials rotated", livemode=livemode)
    logger.info(
        "credentials rotated",
        extra={"partner_id": partner.public_id, "client_id": credential.client_id, "livemode": livemode},
    )
    return IssuedCredentials(
        partner=partner, client_id=credential.client_id, client_secret=secret, livemode=livemode
    )


def credential_by_client_id(*, client_id: str) -> PartnerCredential | PartnerTestCredential | None:
    """The live or test pair a client_id names (``cli_test_…`` is always a test pair)."""
    model = _credential_model(not client_id.startswith("cli_test_"))
    return model.objects.select_related("partner").filter(client_id=client_id).first()


def _credential_copies_void(*, partner: Partner, livemode: bool | None) -> None:
    """The token endpoint's copies of the partner's credentials (of one mode, when given) are void."""
    client_ids = [
        client_id
        for model in (PartnerCredential, PartnerTestCredential)
        if livemode is None or model.livemode == livemode
        for client_id in model.objects.filter(partner=partner).values_list("client_id", flat=True)
    ]
    credentials_changed(client_ids=client_ids)


def sessions_revoke(
    *, partner: Partner, reason: str, state: str = SESSION_REVOKED, livemode: bool | None = None
) -> int:
    """Revoke the partner's live sessions (of one mode, when ``livemode`` is given) and overwrite their
    cached state in the shared cache.

    Durable first: the credential's token generation moves on (so no token signed before can come back,
    whatever Redis holds or lost), and the sessions still waiting in Redis are written to the database with
    the others, so the admin shows them revoked. Every unexpired session is re-published, the ones revoked
    earlier too: a suspension must turn their cached "revoked" into "suspended"."""
    if partner.status != Partner.Status.ACTIVE:
        state = SESSION_SUSPENDED  # e.g. rotating a suspended partner: its tokens still say suspended
    token_generation_advance(partner=partner, livemode=livemode)
    _credential_copies_void(partner=partner, livemode=livemode)
    pending = pending_sessions_of(partner=partner, livemode=livemode)
    if pending:
        TokenSession.objects.bulk_create(session_rows(pending), ignore_conflicts=True)
    now = timezone.now()
    sessions = TokenSession.objects.filter(partner=partner)
    if livemode is not None:
        sessions = sessions.filter(livemode=livemode)
    unexpired = list(sessions.filter(expires_at__gt=now).values_list("session_id", "expires_at"))
    revoked = sessions.filter(revoked_at__isnull=True).update(revoked_at=now, revoked_reason=reason)
    entries = [(sid, expires_at, state, partner.pk, partner.public_id) for sid, expires_at in unexpired]

    def publish_states() -> None:
        try:
            session_states_cache(entries)
        except Exception:
            # While the cache is down every token is checked in the database, which already says revoked;
            # the copies cached before the outage are overwritten when it answers again.
            logger.warning("token cache unreachable while revoking sessions")
            cache_health.failed()

    publish_states()  # at once, so a racing request sees it ...
    transaction.on_commit(publish_states)  # ... and again after commit, over anything cached meanwhile
    return revoked


def partner_transition(*, partner: Partner, to: str, actor: str, reason: str = "", changes=None) -> Partner:
    """Move ``partner`` to ``to`` under its row lock with a history row; return the locked row. Raises
    ``IllegalStateMove`` (and writes nothing) for a move ``PARTNER_TRANSITIONS`` does not have."""
    locked, _ = PARTNER_MACHINE.move(obj=partner, to=to, actor=actor, reason=reason, changes=changes)
    return locked


@transaction.atomic
def partner_suspend(*, partner: Partner, reason: str = "", actor: str = "system") -> Partner:
    """Suspend the partner and revoke its token sessions. A partner suspended already keeps its status (no
    second history row) and takes the new reason; its sessions are revoked again."""
    partner = Partner.objects.select_for_update().get(pk=partner.pk)
    if partner.status == Partner.Status.SUSPENDED:
        partner.suspended_reason = reason
        partner.save(update_fields=["suspended_reason", "updated_at"])
    else:
        partner = partner_transition(
            partner=partner,
            to=Partner.Status.SUSPENDED,
            actor=actor,
            reason=reason,
            changes={"suspended_reason": reason},
        )
    sessions_revoke(partner=partner, reason="partner suspended", state=SESSION_SUSPENDED)
    return partner


@transaction.atomic
def partner_reactivate(*, partner: Partner, reason: str = "", actor: str = "system") -> Partner:
    """Make the partner active again (a partner active already stays so, without a history row)."""
    partner = Partner.objects.select_for_update().get(pk=partner.pk)
    if partner.status != Partner.Status.ACTIVE:
        partner = partner_transition(
            partner=partner,
            to=Partner.Status.ACTIVE,
            actor=actor,
            reason=reason,
            changes={"suspended_reason": ""},
        )
    _credential_copies_void(partner=partner, livemode=None)  # the token endpoint's copies say suspended
    # Tokens from before the suspension stay dead (their sessions were revoked): the partner asks anew.
    now = timezone.now()
    live = TokenSession.objects.filter(partner=partner, expires_at__gt=now).values_list(
        "session_id", flat=True
    )
    keys = [session_cache_key(sid) for sid in live]

    def forget() -> None:
        try:
            cache.delete_many(keys)
        except Exception:
            logger.warning("token cache unreachable while reactivating a partner")
            cache_health.failed()

    forget()
    transaction.on_commit(forget)  # again after commit, over anything a racing request cached meanwhile
    return partner


def _credential_refusal(credential, client_secret: str) -> errors.ApiError | None:
    expected = credential.secret_digest if credential else _DUMMY_DIGEST
    if not hmac.compare_digest(expected, _digest(client_secret)) or credential is None:
        return errors.InvalidCredentials()
    if credential.partner_status != Partner.Status.ACTIVE:
        return errors.AccountSuspended()
    return None


def token_issue(
    *, client_id: str, client_secret: str, client_ip: str | None = None, found: dict | None = None
) -> IssuedToken:
    """docs/partners/authentication.md "Authentication": validate credentials, check the account status, create a session, sign a token.

    ``found``: what the token endpoint's round trip read of :func:`token_cache.credential_cache_keys`."""
    credential = credential_for_token(client_id=client_id, found=found)
    refusal = _credential_refusal(credential, client_secret)
    if refusal is not None and credential is not None and credential.cached:
        # A copy made before a rotation or reactivation that Redis missed must not refuse the new secret.
        credential = credential_for_token(client_id=client_id)
        refusal = _credential_refusal(credential, client_secret)
    if refusal is not None:
        raise refusal
    ttl = settings.ACCESS_TOKEN_TTL_SECONDS
    now = timezone.now()
    expires_at = (now + timedelta(seconds=ttl)).replace(microsecond=0)
    session = PendingSession(
        session_id=new_session_id(),
        partner_pk=credential.partner_pk,
        partner_id=credential.partner_id,
        livemode=credential.livemode,
        scope=GRANTED_SCOPE,
        created_at=now,
        expires_at=expires_at,
        client_ip=client_ip or None,
        generation=credential.token_generation,
    )
    session_create(session)
    access_token = tokens.sign(
        partner_id=credential.partner_id,
        session_id=session.session_id,
        expires_at=expires_at,
        scope=GRANTED_SCOPE,
        livemode=credential.livemode,
        generation=credential.token_generation,
    )
    return IssuedToken(
        access_token=access_token,
        expires_at=expires_at,
        expires_in=ttl,
        scope=GRANTED_SCOPE,
        session_id=session.session_id,
    )
