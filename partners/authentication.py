"""Bearer-token authentication, per-partner rate limiting and scope checks for the partner API."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from config.api import errors, ratelimit

from . import session_services, tokens
from .selectors import SessionState, payment_readiness, session_payment_readiness, session_state
from .token_cache import (
    SESSION_ACTIVE,
    SESSION_SUSPENDED,
    SESSION_UNKNOWN,
    cache_recover,
    session_cache_keys,
)

REALM = 'Bearer realm="partner-api"'


@dataclass(frozen=True)
class PartnerPrincipal:
    """``request.user`` on the partner API: who is calling, without loading the Partner row."""

    pk: int
    partner_id: str
    session_id: str
    scopes: frozenset[str]
    # The mode of the credentials the token was issued for (docs/partners/test-mode.md "Test mode"): every quote, order,
    # notification and webhook endpoint the request reads or writes belongs to this mode.
    livemode: bool = True
    # The session's state as authentication read it (carries the partner's payment readiness).
    session: SessionState | None = field(default=None, compare=False, repr=False)

    is_authenticated = True
    is_anonymous = False


def _view_cache_keys(request) -> list[str]:
    """The shared-cache entries the view will read, if it names them (``cache_prefetch_keys``)."""
    context = getattr(request, "parser_context", None) or {}
    view = context.get("view")
    prefetch = getattr(view, "cache_prefetch_keys", None)
    if prefetch is None:
        return []
    try:
        return list(prefetch(request, **(context.get("kwargs") or {})))
    except Exception:  # bad parameters: the view reports them, after authentication
        return []


def rate_limit_key(*, partner_id: str, livemode: bool) -> str:
    """The per-partner budget's key: live and test mode are counted apart."""
    return f"partner:{partner_id}:{'live' if livemode else 'test'}"


def bearer_authenticate(
    request,
    header: str,
    *,
    read: list[str] = (),
    with_readiness: bool = True,
    write_if: Callable[[tokens.TokenClaims, list[str]], ratelimit.WriteIf | None] | None = None,
) -> tuple[PartnerPrincipal, Any, dict | None]:
    """Authenticate ``Authorization: <header>`` and count the request against its partner's budget.

    ``request`` is the Django request (its ``ratelimit`` carries the headers). One round trip to the shared
    cache reads the session's state, the partner's payment readiness, the entries ``read`` (what the view will
    read: a catalog page and its versions) and counts the partner's rate limit; ``with_readiness=False`` (a
    request that never checks payment readiness: a catalog read) leaves readiness out of it, and the
    principal's session then carries none when the cache answered. Returns the principal, the
    token's claims and the entries of ``read`` found (``None`` when the cache did not answer). Raises the
    API error a refused token gets (401, 403 ACCOUNT_SUSPENDED, 429).

    ``write_if(claims, keys)``: called once the token is verified, with every entry the round trip reads
    (the session's, then ``read``); the writes it returns travel in that round trip and are made only if
    they are due (``config.api.ratelimit.WriteIf``)."""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise errors.Unauthorized(
            "The Authorization header must be 'Bearer <access_token>'.",
            headers={"WWW-Authenticate": f'{REALM}, error="invalid_request"'},
        )
    claims = tokens.verify(token)
    ttl = max(1, claims.expires_at - int(timezone.now().timestamp()))
    # The count is keyed by the signed token's partner id and mode, so it needs no lookup first: live and
    # test mode each have their own budget.
    cache_recover()
    keys = session_cache_keys(
        session_id=claims.session_id, partner_id=claims.partner_id, with_readiness=with_readiness
    )
    keys += read
    limit, found = ratelimit.hit_and_read(
        key=rate_limit_key(partner_id=claims.partner_id, livemode=claims.livemode),
        limit=settings.RATE_LIMIT_PER_MINUTE,
        read=keys,
        write_if=write_if(claims, keys) if write_if is not None else None,
    )
    state = session_state(
        session_id=claims.session_id,
        ttl=ttl,
        partner_id=claims.partner_id,
        found=found,
        read=False,
        livemode=claims.livemode,
        generation=claims.generation,
        with_readiness=with_readiness,
    )
    if state.state == SESSION_UNKNOWN:
        # Neither Redis nor the database holds the session: Redis lost it before the batched writer copied
        # it. The token proves what the session held; it is re-created if its credential is unchanged.
        restored = session_services.token_session_restore(claims=claims)
        if restored == SESSION_ACTIVE:
            state = session_state(
                session_id=claims.session_id,
                ttl=ttl,
                partner_id=claims.partner_id,
                found={} if found is not None else None,
                read=False,
                livemode=claims.livemode,
                generation=claims.generation,
                with_readiness=with_readiness,
            )
        else:
            state = SessionState(restored)
    if state.state == SESSION_SUSPENDED:
        ratelimit.give_back(limit)
        raise errors.AccountSuspended()
    if state.state != SESSION_ACTIVE or state.partner_id != claims.partner_id:
        # A revoked token is not the partner calling: it costs the partner's budget nothing, so nobody
        # holding an old token can exhaust it.
        ratelimit.give_back(limit)
        raise errors.Unauthorized(
            "The token was revoked.",
            headers={
                "WWW-Authenticate": f'{REALM}, error="invalid_token", error_description="token revoked"'
            },
        )
    principal = PartnerPrincipal(
        pk=state.partner_pk,
        partner_id=state.partner_id,
        session_id=claims.session_id,
        scopes=claims.scopes,
        livemode=claims.livemode,
        session=state,
    )
    # Every authenticated call counts against its partner's budget, whatever it answers.
    ratelimit.apply(request, limit)
    return principal, claims, found


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None  # the permission check answers 401 UNAUTHORIZED
        view_keys = _view_cache_keys(request)
        django_request = getattr(request, "_request", request)
        principal, claims, found = bearer_authenticate(django_request, header, read=view_keys)
        if view_keys and found is not None:
            django_request.cache_prefetch = (frozenset(view_keys), found)
        return principal, claims

    def authenticate_header(self, request) -> str:
        return REALM


class TestModeOnly(BasePermission):
    """Endpoints under /v1/test/ answer a live token 403 TEST_MODE_ONLY."""

    def has_permission(self, request, view) -> bool:
        if request.user.livemode:
            # A live token at a test-mode endpoint is refused before anything runs: no budget spent.
            ratelimit.give_back(getattr(request._request, "ratelimit", None))
            raise errors.TestModeOnly()
        return True


class HasRequiredScope(BasePermission):
    """A valid token, carrying the view's ``required_scope`` (docs/partners/authentication.md "Authentication")."""

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not isinstance(principal, PartnerPrincipal):
            return False  # DRF turns this into NotAuthenticated → 401 UNAUTHORIZED
        scope_check(principal, getattr(view, "required_scope", None))
        return True


def scope_check(principal: PartnerPrincipal, scope: str | None) -> None:
    """403 FORBIDDEN when the token lacks ``scope``."""
    if scope and scope not in principal.scopes:
        raise errors.Forbidden(f"The token lacks the scope {scope}.", details={"required_scope": scope})


class PayoutConfigured(BasePermission):
    """Quotes and orders need a payout method and a credit card on file (docs/partners/catalog-and-quotes.md "Quotes"). In test mode the
    sandbox test methods every partner has meet it (docs/partners/test-mode.md "Test mode")."""

    def has_permission(self, request, view) -> bool:
        payout_check(request.user)
        return True


def payout_check(principal: PartnerPrincipal) -> None:
    """403 PAYOUT_METHOD_NOT_CONFIGURED when a live partner lacks a payout method or a card."""
    if not principal.livemode:
        return
    if principal.session is not None:
        readiness = session_payment_readiness(state=principal.session)
    else:
        readiness = payment_readiness(partner_pk=principal.pk)
    if readiness.missing:
        raise errors.PayoutMethodNotConfigured(
            details={"partner_id": principal.partner_id, "missing": readiness.missing}
        )
