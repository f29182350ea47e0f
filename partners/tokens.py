"""Signed bearer tokens: ``base64url(payload).base64url(HMAC-SHA256(key, payload))``.

The payload binds the partner, the token session, the expiry and the scope, and the generation of the
credential it was issued under (``ClientCredential.token_generation``): with it a token proves everything
its session holds, so a session lost with Redis before it reached the database can be re-created from the
token, unless the credential was rotated or the partner suspended since. The signature is checked first, in
constant time; only a well-signed token can be reported as expired.
"""

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.utils import timezone

from config.api import errors
from config.core.keys import derive_key

SCOPES = ("events:read", "quotes:write", "orders:write", "webhooks:write")


@dataclass(frozen=True)
class TokenClaims:
    partner_id: str
    session_id: str
    expires_at: int
    scopes: frozenset[str]
    # False for a token issued from test-mode credentials (docs/partners/test-mode.md "Test mode").
    livemode: bool = True
    # The credential's generation at issue; None for a token issued before tokens carried it (its session
    # was written to the database when it was issued).
    generation: int | None = None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode())


@lru_cache(maxsize=4)
def _derived(secret: str) -> bytes:
    return derive_key(secret, "partner-api access token v1")


def _signing_key() -> bytes:
    return _derived(settings.TOKEN_SIGNING_KEY)


def _invalid_token(description: str) -> errors.Unauthorized:
    return errors.Unauthorized(
        headers={
            "WWW-Authenticate": f'Bearer realm="partner-api", error="invalid_token", error_description="{description}"'
        }
    )


def sign(
    *,
    partner_id: str,
    session_id: str,
    expires_at: datetime,
    scope: str,
    livemode: bool = True,
    generation: int | None = None,
) -> str:
    claims = {"v": 1, "p": partner_id, "s": session_id, "exp": int(expires_at.timestamp()), "scp": scope}
    if generation is not None:
        claims["g"] = generation
    if not livemode:
        claims["test"] = True  # signed with the rest: a live token cannot be turned into a test one
    payload = json.dumps(claims, separators=(",", ":")).encode()
    signature = hmac.new(_signing_key(), payload, hashlib.sha256).digest()
    return f"{_b64(payload)}.{_b64(signature)}"


def verify(token: str, *, now: float | None = None) -> TokenClaims:
    """Check the signature, then the expiry. Raises UNAUTHORIZED or TOKEN_EXPIRED."""
    claims = _verified(token, _signing_key())
    current = timezone.now().timestamp() if now is None else now
    if claims.expires_at <= current:
        raise errors.TokenExpired(
            headers={
                "WWW-Authenticate": 'Bearer realm="partner-api", error="invalid_token", error_description="token expired"'
            }
        )
    return claims


# A partner sends the same token for up to an hour: its signature is checked once per process and key. Only
# tokens that verified are kept (a refused one raises, and lru_cache keeps nothing); the expiry is checked on
# every call, and revocation is the session's business (partners.authentication).
@lru_cache(maxsize=4096)
def _verified(token: str, key: bytes) -> TokenClaims:
    try:
        payload_b64, signature_b64 = token.split(".")
        payload, signature = _unb64(payload_b64), _unb64(signature_b64)
    except (ValueError, binascii.Error):
        raise _invalid_token("malformed token")
    expected = hmac.new(key, payload, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise _invalid_token("bad signature")
    try:
        data = json.loads(payload)
        return TokenClaims(
            partner_id=str(data["p"]),
            session_id=str(data["s"]),
            expires_at=int(data["exp"]),
            scopes=frozenset(str(data["scp"]).split()),
            livemode=data.get("test") is not True,
            generation=int(data["g"]) if "g" in data else None,
        )
    except (ValueError, KeyError, TypeError):
        raise _invalid_token("malformed payload")
