"""Encrypted quote ids: AES-256-GCM over the quote's primary key, URL-safe base64 with a ``qte_`` prefix.

The nonce is an HMAC of the primary key under a second derived key, so one quote always has the same id
(partners may store it; an order's snapshot repeats it) while distinct quotes never share a nonce.

The key comes from ``QUOTE_ENCRYPTION_KEY`` (HKDF-derived, so any string works). During a key rotation the
previous keys stay readable through ``QUOTE_ENCRYPTION_OLD_KEYS``; new ids are always made with the current
key. Anything that does not decrypt and authenticate (tampered, truncated, garbage, another key) decodes to
``None``: callers answer QUOTE_NOT_FOUND, never a 500.
"""

import base64
import binascii
import hashlib
import hmac
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings

from config.core.keys import derive_key

PREFIX = "qte_"
_PURPOSE = "quote-id-v1"
_NONCE_PURPOSE = "quote-id-nonce-v1"
_AAD = b"quote-id-v1"
_NONCE_BYTES = 12
_PK = struct.Struct(">Q")  # 8-byte big-endian primary key
_TOKEN_BYTES = _NONCE_BYTES + _PK.size + 16  # nonce + ciphertext + GCM tag
_MAX_TOKEN_CHARS = len(PREFIX) + 64


def _keys() -> list[bytes]:
    secrets = [settings.QUOTE_ENCRYPTION_KEY, *settings.QUOTE_ENCRYPTION_OLD_KEYS]
    return [derive_key(secret, _PURPOSE) for secret in secrets if secret]


def encode_quote_id(pk: int) -> str:
    plaintext = _PK.pack(pk)
    nonce_key = derive_key(settings.QUOTE_ENCRYPTION_KEY, _NONCE_PURPOSE)
    nonce = hmac.new(nonce_key, plaintext, hashlib.sha256).digest()[:_NONCE_BYTES]
    ciphertext = AESGCM(_keys()[0]).encrypt(nonce, plaintext, _AAD)
    return PREFIX + base64.urlsafe_b64encode(nonce + ciphertext).decode().rstrip("=")


def decode_quote_id(token: str) -> int | None:
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS or not token.startswith(PREFIX):
        return None
    body = token[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    # Re-encoding must give back the same text, so that no two spellings name one quote.
    if len(raw) != _TOKEN_BYTES or base64.urlsafe_b64encode(raw).decode().rstrip("=") != body:
        return None
    nonce, ciphertext = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
    for key in _keys():
        try:
            plaintext = AESGCM(key).decrypt(nonce, ciphertext, _AAD)
        except InvalidTag:
            continue
        (pk,) = _PK.unpack(plaintext)
        return pk
    return None
