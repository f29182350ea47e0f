"""An order's transfer address: ``ord-`` and 16 lower-case letters and digits, all drawn in one read of the system's
generator, each of the 36**16 local parts equally likely."""

import re
from collections import Counter
from unittest import mock

from orders import models

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def test_the_local_part_is_the_drawn_number_in_base_36(settings):
    settings.ORDER_TRANSFER_ADDRESS_DOMAIN = "in.example"
    with mock.patch.object(models.secrets, "randbelow", side_effect=[0, 1, 36**16 - 1, 36 + 2]) as draw:
        drawn = [models.new_transfer_address() for _ in range(4)]
    assert [call.args for call in draw.call_args_list] == [(36**16,)] * 4  # one draw an address, below 36**16
    assert drawn == [
        "ord-aaaaaaaaaaaaaaaa@in.example",
        "ord-baaaaaaaaaaaaaaa@in.example",
        "ord-9999999999999999@in.example",
        "ord-cbaaaaaaaaaaaaaa@in.example",
    ]


def test_every_character_comes_up_in_every_position(settings):
    settings.ORDER_TRANSFER_ADDRESS_DOMAIN = "in.example"
    addresses = [models.new_transfer_address() for _ in range(7200)]
    assert all(re.fullmatch(r"ord-[a-z0-9]{16}@in\.example", a) for a in addresses)
    assert len(set(addresses)) == len(addresses)
    for position in range(16):
        seen = Counter(a[4 + position] for a in addresses)
        assert set(seen) == set(ALPHABET)
        # 200 expected each: far from it only if the draw were biased (a spread this wide has odds below 1e-9).
        assert min(seen.values()) > 100 and max(seen.values()) < 320, (position, seen)
