"""The plain views' answers (config/api/plain.py) are the bytes DRF's renderer writes: orjson writes them where it
writes the same text, and DRF's renderer writes the rest (config.api.renderers.render_compact)."""

import random
import string
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils.functional import lazy
from rest_framework.exceptions import ErrorDetail
from rest_framework.utils.serializer_helpers import ReturnDict

from config.api import renderers
from config.api.renderers import EnvelopeJSONRenderer, render_compact

DRF = EnvelopeJSONRenderer()

SAME = [
    None,
    True,
    0,
    -(2**63),
    2**64 - 1,
    "",
    'quotes " and \\ and / and \n\t\x00\x1f\x7f',
    "Zoë, São Paulo, 東京, 🎫, \ufeff",
    "line\u2028paragraph\u2029",
    [],
    {},
    ("a", "tuple"),
    [1, [2, [3, {"a": [None]}]]],
    Decimal("85.00"),
    Decimal("0.01"),
    Decimal("-12.50"),
    Decimal("9999999999.99"),
    Decimal("0"),
    Decimal("0.0001"),
    {
        "error": {
            "code": "VALIDATION_ERROR",
            "details": {"quantity": [ErrorDetail("Too big.", code="max_value")]},
        }
    },
    ReturnDict({"b": 1, "a": 2}, serializer=None),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
]
# Values orjson would not write as DRF does, or refuses: DRF's renderer writes them.
LEFT_TO_DRF = [
    Decimal("0.00001"),  # a float DRF writes 1e-05
    Decimal("1E+400"),  # no float: DRF's encoder writes inf, which strict JSON refuses
    datetime.now(UTC).replace(microsecond=678000),
    lazy(lambda: "lazy text", str)(),
    2**64,
    {1: "an integer key"},
    {"s": "lone \ud800 surrogate"},
]


def _drf(value) -> bytes | type:
    try:
        return DRF.render(value)
    except Exception as exc:
        return type(exc)


def _ours(value) -> bytes | type:
    try:
        return render_compact(value)
    except Exception as exc:
        return type(exc)


@pytest.mark.parametrize("value", SAME + LEFT_TO_DRF)
def test_the_bytes_are_drfs(value):
    assert _ours(value) == _drf(value)
    envelope = {"success": True, "data": {"value": value, "list": [value]}, "meta": {"request_id": "req_x"}}
    assert _ours(envelope) == _drf(envelope)


@pytest.mark.parametrize("value", LEFT_TO_DRF)
def test_what_orjson_would_write_otherwise_is_written_by_drfs_renderer(value, monkeypatch):
    calls = []
    monkeypatch.setattr(renderers._renderer, "render", lambda data: calls.append(data) or b"drf")
    assert render_compact({"value": value}) == b"drf"
    assert calls == [{"value": value}]


def test_a_plain_answer_is_written_by_orjson(monkeypatch):
    monkeypatch.setattr(renderers._renderer, "render", lambda data: pytest.fail("DRF's renderer"))
    assert (
        render_compact({"price": Decimal("12.50"), "name": "Zoë\u2028"})
        == b'{"price":12.5,"name":"Zo\xc3\xab\\u2028"}'
    )


def test_random_answers_are_drfs_bytes():
    rng = random.Random(20261201)
    alphabet = string.printable + "éü東🎫\u2028\u2029\x00\x1f"

    def value(depth: int):
        kind = rng.randrange(7 if depth < 4 else 5)
        if kind == 0:
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        if kind == 1:
            return rng.randrange(-(10**12), 10**12)
        if kind == 2:
            return Decimal(rng.randrange(-(10**12), 10**12)) / 100
        if kind == 3:
            return rng.choice([None, True, False])
        if kind == 4:
            return Decimal(rng.randrange(0, 10**6)).scaleb(-rng.randrange(0, 9))
        if kind == 5:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {
            "".join(rng.choice(alphabet) for _ in range(5)): value(depth + 1) for _ in range(rng.randrange(4))
        }

    for _ in range(3000):
        data = value(0)
        assert _ours(data) == _drf(data), data
