"""Endpoint signing secrets: ``whsec_`` + base64 of 32 random bytes, stored AES-GCM encrypted.

The key is derived (HKDF, ``config.keys``) from ``SECRET_KEY``; the keys in ``SECRET_KEY_FALLBACKS`` still
decrypt, so the service key can be rotated the way Django rotates it without losing the endpoints' secrets.
"""

import base64
import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings

from config.keys import derive_key

SECRET_PREFIX = "whsec_"
_PURPOSE = "webhook endpoint signing secret v1"
_AAD = b"webhook-endpoint-secret"
_VERSION = "v1:"


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_encrypt(secret: str) -> str:
    nonce = os.urandom(12)
    sealed = AESGCM(derive_key(settings.SECRET_KEY, _PURPOSE)).encrypt(nonce, secret.encode(), _AAD)
    return _VERSION + base64.b64encode(nonce + sealed).decode()


def secret_decrypt(stored: str) -> str:
    if not stored.startswith(_VERSION):
        raise ValueError("not an encrypted webhook secret")
    raw = base64.b64decode(stored[len(_VERSION) :])
    nonce, sealed = raw[:12], raw[12:]
    for key in [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]:
        try:
            return AESGCM(derive_key(key, _PURPOSE)).decrypt(nonce, sealed, _AAD).decode()
        except InvalidTag:
            continue
    raise ValueError("the webhook secret was encrypted with a key the service no longer has")
