"""quotes.codec: authenticated encryption of quote ids."""

import base64
import hashlib
import hmac
import struct

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from config.core.keys import derive_key
from quotes.codec import decode_quote_id, encode_quote_id


def test_quote_id_round_trips_and_is_url_safe():
    for pk in (1, 42, 2**40, 2**63 - 1):
        token = encode_quote_id(pk)
        assert token.startswith("qte_")
        assert all(c.isalnum() or c in "-_" for c in token)
        assert decode_quote_id(token) == pk


def test_an_id_is_sealed_as_its_format_says(settings):
    """The nonce is the first 12 bytes of HMAC-SHA256 of the plaintext under the nonce key; the id is the nonce and
    the AES-256-GCM ciphertext, base64url without padding: an id given out before stays the same."""
    settings.QUOTE_ENCRYPTION_KEY = "a key of this test"
    plaintext = struct.pack(">Q", 4242)
    nonce = hmac.new(
        derive_key(settings.QUOTE_ENCRYPTION_KEY, "quote-id-nonce-v1"), plaintext, hashlib.sha256
    )
    nonce = nonce.digest()[:12]
    sealed = AESGCM(derive_key(settings.QUOTE_ENCRYPTION_KEY, "quote-id-v1")).encrypt(
        nonce, plaintext, b"quote-id-v1"
    )
    expected = "qte_" + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")
    assert encode_quote_id(4242) == expected
    assert decode_quote_id(expected) == 4242


def test_quote_id_is_stable_per_quote_and_unrelated_between_quotes():
    assert encode_quote_id(7) == encode_quote_id(7)
    ids = [encode_quote_id(pk) for pk in range(1, 200)]
    assert len(set(ids)) == len(ids)
    # Neighbouring keys share no prefix beyond chance: the nonce differs per quote.
    nonces = {i[4:20] for i in ids}
    assert len(nonces) == len(ids)


def test_every_single_character_change_is_rejected():
    token = encode_quote_id(1234)
    for i in range(4, len(token)):
        replacement = "A" if token[i] != "A" else "B"
        assert decode_quote_id(token[:i] + replacement + token[i + 1 :]) is None, i


@pytest.mark.parametrize(
    "bad", [None, 12, b"qte_abc", "", "qte_", "qte_===", "qte_\u00e9\u00e9", "qte_" + "A" * 1000]
)
def test_garbage_decodes_to_none(bad):
    assert decode_quote_id(bad) is None


def test_other_key_decodes_to_none_and_old_keys_are_accepted(settings):
    settings.QUOTE_ENCRYPTION_KEY = "key-one"
    settings.QUOTE_ENCRYPTION_OLD_KEYS = []
    token = encode_quote_id(99)
    settings.QUOTE_ENCRYPTION_KEY = "key-two"
    assert decode_quote_id(token) is None
    settings.QUOTE_ENCRYPTION_OLD_KEYS = ["key-one"]
    assert decode_quote_id(token) == 99


# --- self-contained ids: what a quote kept in Redis first is named by ---------------------------------------
def _quote(**overrides):
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from quotes.codec import new_quote_pk, quote_instant
    from quotes.models import Quote

    made = quote_instant(timezone.now())
    values = dict(
        pk=new_quote_pk(),
        partner_id=2**40 + 7,
        livemode=False,
        row_id=2**47 - 1,
        quantity=50,
        offer_price=Decimal("99999999.99"),
        face_value=Decimal("0.01"),
        created_at=made,
        expires_at=made + timedelta(seconds=900),
    )
    values.update(overrides)
    return Quote(**values)


def test_a_self_contained_id_proves_what_the_partner_was_promised():
    from quotes.codec import MAX_QUOTE_ID_CHARS, QuoteClaims, decode_quote_claims

    quote = _quote()
    token = encode_quote_id(quote)
    assert token.startswith("qte_") and len(token) == 102 <= MAX_QUOTE_ID_CHARS
    assert all(c.isalnum() or c in "-_" for c in token)
    assert encode_quote_id(quote) == token  # made again from the row: the same id
    claims = decode_quote_claims(token)
    assert claims == QuoteClaims(
        pk=quote.pk,
        partner_pk=quote.partner_id,
        livemode=False,
        row_pk=quote.row_id,
        quantity=50,
        offer_price=quote.offer_price,
        face_value=quote.face_value,
        created_at=quote.created_at,
        expires_at=quote.expires_at,
    )
    assert decode_quote_id(token) == quote.pk
    assert encode_quote_id(_quote(livemode=True)) != token


def test_every_single_character_change_of_a_self_contained_id_is_rejected():
    token = encode_quote_id(_quote())
    for i in range(4, len(token)):
        replacement = "A" if token[i] != "A" else "B"
        assert decode_quote_id(token[:i] + replacement + token[i + 1 :]) is None, i
    assert decode_quote_id(token[:-1]) is None and decode_quote_id(token + "A") is None


def test_a_self_contained_id_of_another_key_is_rejected(settings):
    settings.QUOTE_ENCRYPTION_KEY = "key-one"
    settings.QUOTE_ENCRYPTION_OLD_KEYS = []
    quote = _quote()
    token = encode_quote_id(quote)
    settings.QUOTE_ENCRYPTION_KEY = "key-two"
    assert decode_quote_id(token) is None
    settings.QUOTE_ENCRYPTION_OLD_KEYS = ["key-one"]
    assert decode_quote_id(token) == quote.pk
