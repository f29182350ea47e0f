"""256-bit keys derived with HKDF-SHA256 from the operator's key strings (any format works), and the sealing
(AES-256-GCM) of what the service keeps secret at rest under ``SECRET_KEY``.

Sealing uses ``SECRET_KEY``; unsealing tries ``SECRET_KEY`` and then every key of ``SECRET_KEY_FALLBACKS``,
so ``SECRET_KEY`` rotates the way Django rotates it: the old key moves to the fallbacks until nothing sealed
under it is kept any more.
"""

import base64
import os
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

SEALED_PREFIX = "v1:"


@lru_cache(maxsize=32)
def derive_key(secret: str, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose.encode()).derive(
        secret.encode()
    )


def service_keys() -> list[str]:
    """``SECRET_KEY`` first, then its fallbacks: the keys whose signatures and sealed values are accepted."""
    return [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]


def seal(plaintext: str, *, purpose: str, aad: bytes) -> str:
    """``v1:`` + base64(nonce + AES-GCM ciphertext) under the key derived from ``SECRET_KEY`` for ``purpose``."""
    nonce = os.urandom(12)
    sealed = AESGCM(derive_key(settings.SECRET_KEY, purpose)).encrypt(nonce, plaintext.encode(), aad)
    return SEALED_PREFIX + base64.b64encode(nonce + sealed).decode()


def unseal(stored: str, *, purpose: str, aad: bytes) -> str:
    """The plaintext of ``seal``; ValueError when it is not sealed or no key the service has opens it."""
    if not stored.startswith(SEALED_PREFIX):
        raise ValueError("not a sealed value")
    raw = base64.b64decode(stored[len(SEALED_PREFIX) :])
    nonce, sealed = raw[:12], raw[12:]
    for key in service_keys():
        try:
            return AESGCM(derive_key(key, purpose)).decrypt(nonce, sealed, aad).decode()
        except InvalidTag:
            continue
    raise ValueError("sealed with a key the service no longer has (SECRET_KEY and SECRET_KEY_FALLBACKS)")
