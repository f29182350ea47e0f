"""Every JSON body is read as DRF's parser reads it (config/api/parsers.py): orjson reads a UTF-8 body where it
reads the same values, and DRF's parser reads the rest, so values and error messages are DRF's."""

import io
import json
import math
import random

import pytest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from config.api import errors, parsers
from config.api.parsers import JSONObjectParser

BODIES = [
    b'{"a":1}',
    b' {"a" : [1, 2.5e-3, true, false, null, -0, -0.0, 1E5, "x"]} ',
    b'{"a":1,"a":2}',
    b'{"n":9223372036854775807,"m":-9223372036854775808}',
    b'{"big":18446744073709551616}',
    b'{"small":-9223372036854775809}',
    b'{"long":1234567890123456789012345.5}',
    b'{"digits":"12345678901234567890123"}',
    b'{"f":1E400}',
    b'{"f":1e-400}',
    b'{"s":"\\ud800"}',
    b'{"s":"\\ud83c\\udfab \\u00e9 \\u2028"}',
    '{"s":"Zoë, 東京, 🎫"}'.encode(),
    b'{"s":"\xed\xa0\x80"}',
    b'{"s":"\xff"}',
    b"\xef\xbb\xbf{}",
    b'{"a":NaN}',
    b'{"a":Infinity}',
    b'{"a":-Infinity}',
    b'{"a":"\x01"}',
    b'{"a":"tab\tin"}',
    b'{"a":1,}',
    b"{'a':1}",
    b'{"a":1} x',
    b"[1]",
    b"null",
    b'"text"',
    b"7",
    b"{",
    b"",
    b"   ",
    b'{"deep":' + b"[" * 200 + b"]" * 200 + b"}",
]


def _drf(raw: bytes, encoding: str = "utf-8"):
    try:
        data = JSONParser().parse(io.BytesIO(raw), "application/json", {"encoding": encoding})
    except ParseError as exc:
        return ("ParseError", str(exc.detail))
    if not isinstance(data, dict):
        return ("ValidationFailed",)
    return ("ok", _exact(data))


def _ours(raw: bytes, encoding: str = "utf-8"):
    try:
        data = JSONObjectParser().parse(io.BytesIO(raw), "application/json", {"encoding": encoding})
    except ParseError as exc:
        return ("ParseError", str(exc.detail))
    except errors.ValidationFailed:
        return ("ValidationFailed",)
    return ("ok", _exact(data))


def _exact(value):
    """``value`` with every type spelt out: 1, 1.0 and True differ, and so do 0.0 and -0.0."""
    if isinstance(value, dict):
        return {key: _exact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_exact(item) for item in value]
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    return (type(value).__name__, value)


@pytest.mark.parametrize("raw", BODIES)
def test_a_body_reads_as_drfs_parser_reads_it(raw):
    assert _ours(raw) == _drf(raw)


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16", "no-such-charset"])
def test_another_charset_is_read_by_drfs_parser(encoding, monkeypatch):
    monkeypatch.setattr(parsers, "_as_python_reads", lambda raw: pytest.fail("orjson"))
    raw = '{"s":"é"}'.encode("latin-1" if encoding == "no-such-charset" else encoding)
    assert _ours(raw, encoding) == _drf(raw, encoding)


@pytest.mark.parametrize("raw", [b'{"big":18446744073709551616}', b'{"a":NaN}', b'{"s":"\\ud800"}'])
def test_what_orjson_reads_otherwise_goes_to_drfs_parser(raw, monkeypatch):
    calls = []
    parse = JSONParser.parse
    monkeypatch.setattr(JSONParser, "parse", lambda *args: calls.append(1) or parse(*args))
    _ours(raw)
    assert calls == [1]


def test_a_plain_body_is_read_by_orjson(monkeypatch):
    raw = b'{"quantity":2,"price":12.5,"name":"Zo\\u00eb","n":[null]}'
    expected = _drf(raw)
    monkeypatch.setattr(JSONParser, "parse", lambda *args: pytest.fail("DRF's parser"))
    assert _ours(raw) == expected


def test_random_bodies_read_as_drfs_parser_reads_them():
    rng = random.Random(20261201)

    def number():
        kind = rng.randrange(5)
        if kind == 0:
            return str(rng.randrange(-(10 ** rng.randrange(1, 25)), 10 ** rng.randrange(1, 25)))
        if kind == 1:
            return repr(rng.uniform(-1e6, 1e6))
        if kind == 2:
            return f"{rng.randrange(1, 999)}e{rng.randrange(-330, 330)}"
        if kind == 3:
            return "-0" if rng.random() < 0.5 else "0.0"
        return f"{rng.randrange(10**17, 10**20)}.{rng.randrange(10**6)}"

    def value(depth: int) -> str:
        kind = rng.randrange(6 if depth < 4 else 4)
        if kind == 0:
            return number()
        if kind == 1:
            return json.dumps("".join(rng.choice('ab"\\/\n\x01é🎫\u2028') for _ in range(rng.randrange(6))))
        if kind == 2:
            return rng.choice(["true", "false", "null"])
        if kind == 3:
            return json.dumps(str(rng.randrange(10**25)))
        if kind == 4:
            return "[" + ",".join(value(depth + 1) for _ in range(rng.randrange(4))) + "]"
        return (
            "{" + ",".join(f'"k{rng.randrange(3)}":{value(depth + 1)}' for _ in range(rng.randrange(4))) + "}"
        )

    for _ in range(3000):
        raw = ("{" + f'"v":{value(0)}' + "}").encode()
        assert _ours(raw) == _drf(raw), raw
