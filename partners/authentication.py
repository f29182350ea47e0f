"""Bearer-token authentication, per-partner rate limiting and scope checks for the partner API."""

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from config.api import errors, ratelimit

from . import tokens
from .selectors import SESSION_ACTIVE, SESSION_SUSPENDED, payment_readiness, session_state

REALM = 'Bearer realm="partner-api"'


@dataclass(frozen=True)
class PartnerPrincipal:
    """``request.user`` on the partner API: who is calling, without loading the Partner row."""

    pk: int
    partner_id: str
    session_id: str
    scopes: frozenset[str]
    # The mode of the credentials the token was issued for (README "Test mode"): every quote, order,
    # notification and webhook endpoint the request reads or writes belongs to this mode.
    livemode: bool = True

    is_authenticated = True
    is_anonymous = False


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None  # the permission check answers 401 UNAUTHORIZED
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise errors.Unauthorized(
                "The Authorization header must be 'Bearer <access_token>'.",
                headers={"WWW-Authenticate": f'{REALM}, error="invalid_request"'},
            )
        claims = tokens.verify(token)
        ttl = max(1, claims.expires_at - int(timezone.now().timestamp()))
        state = session_state(session_id=claims.session_id, ttl=ttl)
        if state.state == SESSION_SUSPENDED:
            raise errors.AccountSuspended()
        if state.state != SESSION_ACTIVE or state.partner_id != claims.partner_id:
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
        )
        # Every authenticated call counts against its partner's budget, whatever it answers.
        ratelimit.enforce(request, key=f"partner:{principal.pk}", limit=settings.RATE_LIMIT_PER_MINUTE)
        return principal, claims

    def authenticate_header(self, request) -> str:
        return REALM


class TestModeOnly(BasePermission):
    """Endpoints under /v1/test/ answer a live token 403 TEST_MODE_ONLY."""

    def has_permission(self, request, view) -> bool:
        if request.user.livemode:
            raise errors.TestModeOnly()
        return True


class HasRequiredScope(BasePermission):
    """A valid token, carrying the view's ``required_scope`` (README "API conventions › Authentication")."""

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not isinstance(principal, PartnerPrincipal):
            return False  # DRF turns this into NotAuthenticated → 401 UNAUTHORIZED
        scope = getattr(view, "required_scope", None)
        if scope and scope not in principal.scopes:
            raise errors.Forbidden(f"The token lacks the scope {scope}.", details={"required_scope": scope})
        return True


class PayoutConfigured(BasePermission):
    """Quotes and orders need a payout method and a credit card on file (README "Quotes"). In test mode the
    sandbox test methods every partner has meet it (README "Test mode")."""

    def has_permission(self, request, view) -> bool:
        if not request.user.livemode:
            return True
        readiness = payment_readiness(partner_pk=request.user.pk)
        if readiness.missing:
            raise errors.PayoutMethodNotConfigured(
                details={"partner_id": request.user.partner_id, "missing": readiness.missing}
            )
        return True
