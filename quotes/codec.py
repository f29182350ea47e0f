"""Encrypted quote ids: AES-256-GCM, URL-safe base64 with a ``qte_`` prefix, in two forms.

- **Self-contained** (every quote made now): the id carries what the partner was promised — the quote's
  key, its partner and mode, the row, the quantity, the offer and face value, when it was made and when it
  expires. A quote can then live in Redis first and reach PostgreSQL by a batched writer
  (``quotes.services``): whatever becomes of Redis, the id alone still proves the price, the quantity and
  the expiry, and order creation writes the quote's row from it if nothing else has.
- **By primary key** (quotes made before): the quote's primary key alone, whose row was written when the
  quote was made. These ids stay valid.

Both are deterministic: the nonce is an HMAC of the plaintext under a second derived key, so one quote always
has the same id (partners may store it; an order's snapshot repeats it) while distinct quotes never share a
nonce (the self-contained plaintext holds the quote's random key). They differ in length (52 and 102
characters), which tells them apart before any decryption.

The key comes from ``QUOTE_ENCRYPTION_KEY`` (HKDF-derived, so any string works). During a key rotation the
previous keys stay readable through ``QUOTE_ENCRYPTION_OLD_KEYS``; new ids are always made with the current
key. Anything that does not decrypt and authenticate (tampered, truncated, garbage, another key) decodes to
``None``: callers answer QUOTE_NOT_FOUND, never a 500.
"""

import base64
import binascii
import functools
import hashlib
import hmac
import secrets
import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings

from config.core.keys import derive_key

PREFIX = "qte_"
_PURPOSE = "quote-id-v1"
_NONCE_PURPOSE = "quote-id-nonce-v1"
_AAD = b"quote-id-v1"
_AAD_SELF_CONTAINED = b"quote-id-v2"
_NONCE_BYTES = 12
_TAG_BYTES = 16
_PK = struct.Struct(">Q")  # 8-byte big-endian primary key
# Self-contained: format, key, partner, row, quantity, flags, offer and face value in cents, made at (epoch
# milliseconds) and lifetime (milliseconds). Six-byte integers hold every primary key and every price the
# columns can (10 digits, 2 decimals).
_SELF_CONTAINED = struct.Struct(">BQ6s6sBB6s6s6sI")
_FORMAT = 2
_LIVEMODE = 0x01
_BY_PK_BYTES = _NONCE_BYTES + _PK.size + _TAG_BYTES
_SELF_CONTAINED_BYTES = _NONCE_BYTES + _SELF_CONTAINED.size + _TAG_BYTES
MAX_QUOTE_ID_CHARS = 128  # documented to partners: ids are opaque, at most this long
# A self-contained quote's primary key is random in [2**62, 2**63): never one of the sequence's.
SELF_CONTAINED_PK_MIN = 2**62


@dataclass(frozen=True)
class QuoteClaims:
    """What a self-contained quote id proves."""

    pk: int
    partner_pk: int
    livemode: bool
    row_pk: int
    quantity: int
    offer_price: Decimal
    face_value: Decimal
    created_at: datetime
    expires_at: datetime


def new_quote_pk() -> int:
    """The primary key of a new quote: random, so the service needs no database to name it."""
    return SELF_CONTAINED_PK_MIN + secrets.randbelow(2**62)


def is_self_contained(pk: int) -> bool:
    return pk >= SELF_CONTAINED_PK_MIN


def quote_instant(value: datetime) -> datetime:
    """``value`` to the millisecond: a self-contained id holds its instants in milliseconds, so a quote's
    times are kept that way and its id can be made again from its row."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


@functools.lru_cache(maxsize=8)
def _ciphers(current: str, old: tuple[str, ...]) -> tuple[hmac.HMAC, list[AESGCM]]:
    """The nonce's HMAC, keyed with the nonce key of ``current``, and the ciphers of every key, the current one
    first: derived once per set of keys (a key rotation, a test's settings make another set). Each nonce is
    made from a copy of that HMAC, which holds the key's two hash states already: a new HMAC per id spent a
    third of the id's time on the key (OpenSSL's one-shot HMAC looks its digest up and keys it each time)."""
    ciphers = [AESGCM(derive_key(secret, _PURPOSE)) for secret in (current, *old) if secret]
    return hmac.new(derive_key(current, _NONCE_PURPOSE), digestmod=hashlib.sha256), ciphers


def _keys() -> tuple[hmac.HMAC, list[AESGCM]]:
    return _ciphers(settings.QUOTE_ENCRYPTION_KEY, tuple(settings.QUOTE_ENCRYPTION_OLD_KEYS))


def _nonce(keyed: hmac.HMAC, plaintext: bytes) -> bytes:
    """HMAC-SHA256 of ``plaintext`` under the nonce key, cut to a nonce's length."""
    mac = keyed.copy()
    mac.update(plaintext)
    return mac.digest()[:_NONCE_BYTES]


def _seal(plaintext: bytes, aad: bytes) -> str:
    keyed, ciphers = _keys()
    nonce = _nonce(keyed, plaintext)
    ciphertext = ciphers[0].encrypt(nonce, plaintext, aad)
    return PREFIX + base64.urlsafe_b64encode(nonce + ciphertext).decode().rstrip("=")


def _cents(value: Decimal) -> bytes:
    return int((Decimal(value) * 100).to_integral_value()).to_bytes(6, "big")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def _millis(value: datetime) -> int:
    return (value - _EPOCH) // _MILLISECOND


def encode_quote_id(quote) -> str:
    """The id of ``quote`` (a ``Quote``), or of a primary key given alone (the form by primary key)."""
    if isinstance(quote, int):
        return _seal(_PK.pack(quote), _AAD)
    if not is_self_contained(quote.pk):
        return _seal(_PK.pack(quote.pk), _AAD)
    made = _millis(quote.created_at)
    plaintext = _SELF_CONTAINED.pack(
        _FORMAT,
        quote.pk,
        quote.partner_id.to_bytes(6, "big"),
        quote.row_id.to_bytes(6, "big"),
        quote.quantity,
        _LIVEMODE if quote.livemode else 0,
        _cents(quote.offer_price),
        _cents(quote.face_value),
        made.to_bytes(6, "big"),
        _millis(quote.expires_at) - made,
    )
    return _seal(plaintext, _AAD_SELF_CONTAINED)


def _open(token: str) -> tuple[bytes, bytes] | None:
    """The plaintext of a well-formed id and the additional data it was sealed with, or None."""
    if not isinstance(token, str) or len(token) > MAX_QUOTE_ID_CHARS or not token.startswith(PREFIX):
        return None
    body = token[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    # Re-encoding must give back the same text, so that no two spellings name one quote.
    if base64.urlsafe_b64encode(raw).decode().rstrip("=") != body:
        return None
    if len(raw) == _BY_PK_BYTES:
        aad = _AAD
    elif len(raw) == _SELF_CONTAINED_BYTES:
        aad = _AAD_SELF_CONTAINED
    else:
        return None
    nonce, ciphertext = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
    for cipher in _keys()[1]:
        try:
            return cipher.decrypt(nonce, ciphertext, aad), aad
        except InvalidTag:
            continue
    return None


def decode_quote_claims(token: str) -> int | QuoteClaims | None:
    """What the id proves: a self-contained id's ``QuoteClaims``, an id by primary key's primary key, or
    None for anything that is not an id of ours."""
    opened = _open(token)
    if opened is None:
        return None
    plaintext, aad = opened
    if aad == _AAD:
        (pk,) = _PK.unpack(plaintext)
        return pk
    fmt, pk, partner, row, quantity, flags, offer, face, made, life = _SELF_CONTAINED.unpack(plaintext)
    if fmt != _FORMAT or not is_self_contained(pk):
        return None
    created_at = _EPOCH + int.from_bytes(made, "big") * _MILLISECOND
    return QuoteClaims(
        pk=pk,
        partner_pk=int.from_bytes(partner, "big"),
        livemode=bool(flags & _LIVEMODE),
        row_pk=int.from_bytes(row, "big"),
        quantity=quantity,
        offer_price=Decimal(int.from_bytes(offer, "big")) / 100,
        face_value=Decimal(int.from_bytes(face, "big")) / 100,
        created_at=created_at,
        expires_at=created_at + life * _MILLISECOND,
    )


def decode_quote_id(token: str) -> int | None:
    """The primary key the id names (either form), or None."""
    claims = decode_quote_claims(token)
    return claims.pk if isinstance(claims, QuoteClaims) else claims
