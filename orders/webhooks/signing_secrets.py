"""Endpoint signing secrets: ``whsec_`` + base64 of 32 random bytes, stored AES-GCM encrypted.

The key is derived (HKDF, ``config.core.keys``) from ``SECRET_KEY``; the keys in ``SECRET_KEY_FALLBACKS`` still
decrypt, so the service key can be rotated the way Django rotates it without losing the endpoints' secrets.
"""

import base64
import secrets

from config.core.keys import seal, unseal

SECRET_PREFIX = "whsec_"
_PURPOSE = "webhook endpoint signing secret v1"
_AAD = b"webhook-endpoint-secret"


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_encrypt(secret: str) -> str:
    return seal(secret, purpose=_PURPOSE, aad=_AAD)


def secret_decrypt(stored: str) -> str:
    try:
        return unseal(stored, purpose=_PURPOSE, aad=_AAD)
    except ValueError as exc:
        raise ValueError(f"webhook secret: {exc}") from exc
