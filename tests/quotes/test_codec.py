"""quotes.codec: authenticated encryption of quote ids."""

import pytest

from quotes.codec import decode_quote_id, encode_quote_id

pytestmark = pytest.mark.embedded


def test_quote_id_round_trips_and_is_url_safe():
    for pk in (1, 42, 2**40, 2**63 - 1):
        token = encode_quote_id(pk)
        assert token.startswith("qte_")
        assert all(c.isalnum() or c in "-_" for c in token)
        assert decode_quote_id(token) == pk


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
