import hashlib

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import errors, ratelimit
from config.api.envelope import utc_iso
from config.api.parsers import JSONObjectParser
from config.api.plain import Answer, json_body, plain_view, takes_json
from config.api.routes import short_path
from config.api.schema import error_responses
from config.api.validation import ReusedValidator, text_as_given

from . import services
from .serializers import AccessTokenSerializer, ClientCredentialsSerializer
from .token_cache import credential_cache_keys

_credentials_body = ReusedValidator(ClientCredentialsSerializer)
_CREDENTIAL_FIELDS = tuple(ClientCredentialsSerializer().fields.items())
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _credentials(body) -> dict:
    """The validated body: read by hand when every field is a string the serializer takes as it is, else by
    the serializer (its errors are the answer)."""
    if type(body) is dict:
        data = {}
        for name, field in _CREDENTIAL_FIELDS:
            text = text_as_given(body.get(name), field)
            if text is None:
                break
            data[name] = text
        else:
            return data
    return _credentials_body.validate(body)


class TokenView(APIView):
    """POST /v1/auth/token — exchange client credentials for a signed bearer token."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [JSONObjectParser, FormParser, MultiPartParser]

    @extend_schema(
        operation_id="auth_token",
        tags=["Authentication"],
        summary="Obtain an access token",
        description=(
            "Client-credentials flow. Checks, in order: body shape (400 VALIDATION_ERROR), grant_type "
            "(400 UNSUPPORTED_GRANT_TYPE), credentials (401 INVALID_CREDENTIALS), account status "
            "(403 ACCOUNT_SUSPENDED). The token is valid for 3600 seconds, at `data.access_token`: reuse it until "
            "shortly before `expires_at`. Rate-limited to 60 requests a minute per client_id and calling "
            "address (every request counts), and to 60 failed attempts a minute per calling address across "
            "client_ids (past it the address gets 429 until the window ends). One address's failures never "
            "refuse another address."
        ),
        auth=[],
        request=ClientCredentialsSerializer,
        responses={
            200: AccessTokenSerializer,
            **error_responses(
                errors.ValidationFailed,
                errors.UnsupportedGrantType,
                errors.InvalidCredentials,
                errors.AccountSuspended,
            ),
        },
        examples=[
            OpenApiExample(
                "Token request",
                request_only=True,
                value={
                    "client_id": "cli_4f9Q2m",
                    "client_secret": "sec_…",
                    "grant_type": "client_credentials",
                },
            ),
            OpenApiExample(
                "Token",
                response_only=True,
                value={
                    "access_token": "eyJ2IjoxLCJwIjoicHRuXz...Ryx3",
                    "token_type": "Bearer",
                    "expires_at": "2026-11-21T19:30:00Z",
                    "expires_in": 3600,
                    "scope": "events:read quotes:write orders:write webhooks:write",
                },
            ),
        ],
    )
    def post(self, request):
        return Response(_token(request.data, request), headers=_NO_STORE)


def _token(body, request) -> dict:
    """Check the body, the grant type, the rate limits and the credentials; issue the token."""
    validated = _credentials(body)
    if validated["grant_type"] != "client_credentials":
        raise errors.UnsupportedGrantType()
    ip = ratelimit.client_ip(request)
    # An address that sprays client_ids is stopped by its own failures, before any lookup. Only its
    # failures count, and only against itself: another address is never refused because of them.
    failures_key = f"token-failures:{ip}"
    # client_id is whatever the caller sent: hashed, so that the cache key stays short and plain.
    client_key = hashlib.blake2b(validated["client_id"].encode(), digest_size=12).hexdigest()
    # One round trip: the address's failures so far, the copy of the credential the client_id names
    # (partners.token_cache), and this request counted against its client_id.
    failures_now = ratelimit.window_key(failures_key)
    state, found = ratelimit.hit_and_read(
        key=f"token:{client_key}:{ip}",
        limit=settings.TOKEN_RATE_LIMIT_PER_MINUTE,
        policy="token",
        read=[failures_now, *credential_cache_keys(validated["client_id"])],
    )
    failures = ratelimit.state_of(
        int((found or {}).get(failures_now) or 0),
        limit=settings.TOKEN_FAILURES_PER_IP_PER_MINUTE,
        reached=True,
    )
    if found is not None and failures.exceeded:
        raise errors.RateLimitExceeded(headers={"Retry-After": str(failures.reset)})
    ratelimit.apply(request, state)
    try:
        issued = services.token_issue(
            client_id=validated["client_id"],
            client_secret=validated["client_secret"],
            client_ip=ip if ip != "unknown" else None,
            found=found,
        )
    except errors.InvalidCredentials:
        ratelimit.hit(key=failures_key, limit=settings.TOKEN_FAILURES_PER_IP_PER_MINUTE)
        raise
    # The shape of AccessTokenSerializer, built directly: this is the busiest write endpoint.
    return {
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_at": utc_iso(issued.expires_at),
        "expires_in": issued.expires_in,
        "scope": issued.scope,
    }


_token_answer = Answer(TokenView)


def _answer(request):
    """POST /v1/auth/token with a JSON body, without DRF's dispatch (the endpoint authenticates nobody)."""
    try:
        data = _token(json_body(request), request)
    except Exception as exc:
        return _token_answer.failed(exc, request)
    return _token_answer.ok(data, request, headers=_NO_STORE)


token_view = short_path(plain_view(TokenView.as_view(), takes_json, _answer), ("POST",), body=True)
