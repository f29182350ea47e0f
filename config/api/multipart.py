"""A small multipart form of text fields, read in one pass: the fields Django's multipart parser would give for
the one shape that partner clients send (Python's ``requests``, curl's ``-F``, browsers' ``FormData``), or
``None`` for anything else, which Django's parser then reads as before.

The shape taken, and nothing else: ``Content-Type: multipart/form-data; boundary=B`` (lower case, that one
parameter, unquoted, ``B`` of letters, digits, ``_``, ``.`` and ``-``, at most 70); the body starts with the
delimiter ``--B``; every part is exactly ``\\r\\nContent-Disposition: form-data; name="N"\\r\\n\\r\\nV\\r\\n``
followed by the next delimiter, ``N`` a name of letters, digits and ``_`` (at most 64), ``V`` printable ASCII
(no CR, no LF, possibly empty); the last delimiter is followed by ``--`` and an optional ``\\r\\n``, then nothing.
A file, another header, a quoted or encoded name, a byte outside printable ASCII, a bare LF, a preamble or an
epilogue: ``None``. So are forms of more fields than ``MAX_FIELDS`` or Django's ``DATA_UPLOAD_MAX_NUMBER_FIELDS``
and bodies over ``MAX_BYTES`` or ``DATA_UPLOAD_MAX_MEMORY_SIZE``, where Django's own limits and errors apply.

For this shape Django's parser splits the body at each delimiter, drops the CRLF before it, reads the one header
and decodes name and value as ASCII: the same strings as here, in the same order
(``tests/config/test_multipart.py`` compares the two over generated and mutated bodies).
"""

from __future__ import annotations

import re

from django.conf import settings
from django.http import HttpRequest, QueryDict

from .plain import content_length

# A form of text fields is small: a larger body (a file, or fields of kilobytes) goes to Django's parser.
MAX_BYTES = 4096
MAX_FIELDS = 32

_CONTENT_TYPE = re.compile(r"multipart/form-data; boundary=([A-Za-z0-9_.\-]{1,70})")
_PART = re.compile(rb'\r\nContent-Disposition: form-data; name="([A-Za-z0-9_]{1,64})"\r\n\r\n([ -~]*)\r\n')
_CLOSE = (b"--", b"--\r\n")


def _small(length: int) -> bool:
    """A body of ``length`` bytes this reader takes: some, at most ``MAX_BYTES`` and within Django's memory limit."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return 0 < length <= MAX_BYTES and (limit is None or length <= limit)


def text_fields(content_type: str, body: bytes) -> QueryDict | None:
    """The form's fields as Django's multipart parser returns them (an immutable ``QueryDict``), for a body of
    the shape above; ``None`` for any other body."""
    if not _small(len(body)):
        return None
    shape = _CONTENT_TYPE.fullmatch(content_type)
    if shape is None:
        return None
    pieces = body.split(b"--" + shape.group(1).encode("ascii"))
    if len(pieces) < 3 or pieces[0] or pieces[-1] not in _CLOSE:
        return None
    fields = pieces[1:-1]
    most = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    if len(fields) > MAX_FIELDS or (most is not None and len(fields) > most):
        return None
    form = QueryDict(mutable=True)
    for piece in fields:
        part = _PART.fullmatch(piece)
        if part is None:
            return None
        form.appendlist(part.group(1).decode("ascii"), part.group(2).decode("ascii"))
    form._mutable = False
    return form


def request_text_fields(request: HttpRequest) -> QueryDict | None:
    """:func:`text_fields` of the request's body, read only when it is small enough to be taken (a larger one is
    left unread, for Django's parser to stream)."""
    if not _small(content_length(request)):
        return None
    return text_fields(request.META.get("CONTENT_TYPE", ""), request.body)
