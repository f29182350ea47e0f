"""The JSON parser of every partner API view: a body that is present is a JSON object.

DRF's own parser returns whatever the JSON holds, and a view reading ``request.data or {}`` then takes
``null``, ``false``, ``0``, ``""`` or ``[]`` for no body at all (docs/partners/conventions.md "Strict
input"). An empty body (no bytes) is still no body: DRF does not call the parser for it.

A UTF-8 body is read by orjson where it reads what Python's ``json`` reads (about a fifth of DRF's parser's
time on a quote's body); every other body, and every body orjson refuses, is read by DRF's parser, whose
values and error messages are the answer's.
"""

import codecs
import functools
import io

import orjson
from django.conf import settings
from rest_framework.parsers import JSONParser

from . import errors

# orjson reads an integer beyond 64 bits as a float, where Python's json keeps the integer: a body with a run of
# 19 digits or more (an integer that may not fit, a long mantissa, a long string of digits) is read by DRF's
# parser.
_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"0" * 9)
_LONG_DIGITS = b"0" * 19


@functools.lru_cache(maxsize=16)
def _is_utf8(encoding) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except (LookupError, TypeError):
        return False  # DRF's parser answers an encoding it does not know


def _as_python_reads(raw: bytes):
    """The value of ``raw`` when orjson reads it as Python's ``json`` does (NaN and Infinity refused as DRF's
    strict parser refuses them); ``None`` when DRF's parser is to read it (``null`` itself included)."""
    if _LONG_DIGITS in raw.translate(_DIGITS_AS_ZEROS):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # not JSON to orjson: a lone surrogate, invalid UTF-8, 1e400, a BOM, …
        return None


class JSONObjectParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = None
        if _is_utf8((parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)):
            raw = stream.read()
            data = _as_python_reads(raw)
            stream = io.BytesIO(raw)
        if data is None:
            data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise errors.ValidationFailed(
                "The JSON body must be an object.", field="body", issue="invalid_type"
            )
        return data
