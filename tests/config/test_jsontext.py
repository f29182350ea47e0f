"""The JSON text the service stores (config/core/jsontext.py) means what Python's ``json`` writes: the same text
where both write ASCII and no float (a float's exponent is written ``1e-7``, not ``1e-07``), the same values read
back always, Python's own text where orjson refuses a value, and the
same values in ``as_json`` as ``json.loads(json.dumps(…))``."""

import json
import math
import random
import struct
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from rest_framework.utils.encoders import JSONEncoder

from config.core import jsontext
from config.core.rawsql import _json_scalar

INSTANTS = [
    datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC),
    datetime(2001, 2, 3, 4, 5, 6, 789, tzinfo=UTC),
    datetime(2001, 2, 3, 4, 5, 6, 789000, tzinfo=ZoneInfo("Asia/Kolkata")),
    datetime(1899, 12, 31, 23, 0, tzinfo=ZoneInfo("Europe/Amsterdam")),  # an offset in seconds (LMT)
    datetime(2001, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=-3, minutes=-30))),
    datetime(2001, 2, 3, 4, 5, 6),
    date(2001, 2, 3),
    time(4, 5, 6, 7),
    time(4, 5, tzinfo=UTC),
]
VALUES = [
    None,
    True,
    0,
    -(2**63),
    2**64 - 1,
    1.5,
    -0.0,
    1e-7,
    1e22,
    "",
    "plain",
    'quotes " and \\ and / and \n\t\x00\x1f',
    "Zoë, São Paulo, 東京, 🎫",
    "\u2028\u2029",
    [],
    {},
    [1, [2, [3, {"a": [None]}]]],
    {"restrictions": ["Obstructed view", None, "21+"], "n": {"deep": {"er": [1.25, "x"]}}},
    ("a", "tuple"),
    Decimal("85.00"),
    Decimal("0.000001"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    *INSTANTS,
]
# Values orjson refuses, written by Python's json.
REFUSED = [2**64, -(2**63) - 1, {1: "int key"}, {"s": "lone \ud800 surrogate"}, [{"big": 10**30}]]


def _exponent(value) -> bool:
    """Whether ``value`` holds a float that Python writes with an exponent."""
    if isinstance(value, float):
        return "e" in repr(value)
    if isinstance(value, dict):
        return any(_exponent(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_exponent(item) for item in value)
    return False


def _random_floats(count: int) -> list[float]:
    rng = random.Random(11)
    floats = []
    while len(floats) < count:
        value = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if not math.isnan(value) and not math.isinf(value):
            floats.append(value)
    return floats


def test_the_text_reads_back_as_pythons_and_is_pythons_where_it_is_ascii():
    for value in [*VALUES, VALUES, dict(enumerate(map(str, VALUES)))] + [{"all": VALUES}]:
        try:
            expected = json.dumps(value, default=_json_scalar, separators=(",", ":"))
        except TypeError:
            continue  # a value Python's json refuses too (a time with a zone, say, is refused by neither)
        written = jsontext.dumps(value, default=_json_scalar)
        assert json.loads(written) == json.loads(expected), value
        if expected.isascii() and "\\u" not in expected and not _exponent(value):
            assert written == expected, value


def test_every_instant_is_written_by_default_as_python_writes_it():
    for value in INSTANTS:
        assert jsontext.dumps([value], default=_json_scalar) == json.dumps([value], default=_json_scalar)


def test_floats_read_back_exactly():
    floats = _random_floats(20_000)
    assert json.loads(jsontext.dumps(floats)) == floats
    assert jsontext.as_json(floats) == floats


def test_what_orjson_refuses_is_written_by_python():
    for value in REFUSED:
        assert jsontext.dumps(value) == json.dumps(value, separators=(",", ":"))
        assert jsontext.as_json(value) == json.loads(json.dumps(value))


def test_as_json_is_json_loads_of_json_dumps_with_the_same_default():
    encoder = JSONEncoder()
    for value in [*VALUES, *REFUSED, {"order": {"offer_price": Decimal("12.5"), "at": INSTANTS[1]}}]:
        try:
            expected = json.loads(json.dumps(value, cls=JSONEncoder))
        except ValueError as refused:  # a time with a zone: refused by the encoder, the same way
            with pytest.raises(ValueError, match=str(refused)):
                jsontext.as_json(value, default=encoder.default)
            continue
        got = jsontext.as_json(value, default=encoder.default)
        assert got == expected and type(got) is type(expected), value
        assert repr(got) == repr(expected), value  # 85.0 stays a float, -0.0 keeps its sign
