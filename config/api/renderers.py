import math
from decimal import Decimal

import orjson
from rest_framework.renderers import JSONRenderer

from .envelope import success_body


class EnvelopeJSONRenderer(JSONRenderer):
    """Wraps every successful DRF response in the envelope; error responses arrive already wrapped."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        renderer_context = renderer_context or {}
        response = renderer_context.get("response")
        if response is not None and not getattr(response, "enveloped", False):
            data = success_body(data, renderer_context.get("request"))
        return super().render(data, accepted_media_type, renderer_context)


_renderer = EnvelopeJSONRenderer()
# The decimal numbers whose float orjson writes as Python's ``repr`` does: a float below 1e-4 it may write
# ``0.00001`` where Python writes ``1e-05`` (the same number). A price is whole cents.
_FIXED_NOTATION_FROM = Decimal("0.0001")


def _decimal_as_float(value):
    # What DRF's encoder writes of a Decimal: its float. Anything else, and a Decimal whose float would be
    # spelt otherwise, goes to DRF's renderer.
    if type(value) is Decimal and (not value or abs(value) >= _FIXED_NOTATION_FROM):
        number = float(value)
        if math.isfinite(number):
            return number
    raise TypeError("left to DRF's renderer")


def render_compact(data) -> bytes:
    """The bytes DRF's renderer writes of ``data`` as compact JSON (an answer already in its envelope): written
    by orjson where every value is a string, a number, a boolean, ``None``, a list, a tuple, a dict with string
    keys or a Decimal (as its float), and by DRF's renderer for anything else (an instant, an integer beyond
    64 bits, a lone surrogate). Same text: no space after the separators, characters beyond ASCII as they are,
    U+2028 and U+2029 escaped; a UUID as its text. A float given as a float (none in an answer: prices are
    Decimals) below 1e-4 is spelt in fixed notation, the same number."""
    if data is None:
        return b""  # as DRF's renderer
    try:
        text = orjson.dumps(
            data,
            default=_decimal_as_float,
            option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS,
        )
    except orjson.JSONEncodeError:
        return _renderer.render(data)
    if b"\xe2\x80\xa8" in text or b"\xe2\x80\xa9" in text:
        text = text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return text
