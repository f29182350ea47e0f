"""Cursor (keyset) pagination: ``{"results", "has_more", "next_cursor"}``, stable while rows are inserted.

The cursor is the sort key of the last row returned, as base64url JSON, followed by ``.`` and a
truncated HMAC-SHA256 of it (key derived from ``SECRET_KEY``; a cursor signed under a key now in
``SECRET_KEY_FALLBACKS`` still reads, so a key rotation does not break a client's paging). Only cursors this service made reach the
database: one that is edited, truncated, made for another ordering or forged (``"v": [null, null]``, a
string where the id goes) is 400 VALIDATION_ERROR on ``cursor`` on every list, never a 500, because it is
rejected here, in the pagination every list endpoint shares.
"""

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from config.core.keys import derive_key, service_keys

from . import errors

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class PageParamsSerializer(serializers.Serializer):
    """The query of a list (every list's parameters extend it). A parameter given with an empty value
    (``?cursor=``, ``?date_from=``) is VALIDATION_ERROR, never read as absent as DRF reads it."""

    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_LIMIT,
        default=DEFAULT_LIMIT,
        help_text="Page size, 1–100 (default 20).",
    )
    cursor = serializers.CharField(
        required=False,
        allow_blank=False,
        max_length=512,
        help_text="Opaque cursor from the previous page's `next_cursor`.",
    )

    def to_internal_value(self, data):
        values = data.getlist if hasattr(data, "getlist") else lambda name: [data[name]]
        blank = [name for name in self.fields if name in data and "" in values(name)]
        if blank:
            raise serializers.ValidationError(
                {name: [ErrorDetail("May not be blank.", code="invalid")] for name in blank}
            )
        return super().to_internal_value(data)


@dataclass
class Page:
    results: list[Any]
    has_more: bool
    next_cursor: str | None


def _encode_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"dt": value.isoformat()}
    if isinstance(value, date):
        return {"d": value.isoformat()}
    if isinstance(value, Decimal):
        return {"dec": str(value)}
    return value


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if "dt" in value:
            return datetime.fromisoformat(value["dt"])
        if "d" in value:
            return date.fromisoformat(value["d"])
        if "dec" in value:
            return Decimal(value["dec"])
        raise ValueError("unknown cursor value")
    return value


_SIGNATURE_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode())


_PURPOSE = "pagination cursor v1"


def _signature(payload: bytes, secret: str | None = None) -> bytes:
    key = derive_key(secret or settings.SECRET_KEY, _PURPOSE)
    return hmac.new(key, payload, hashlib.sha256).digest()[:_SIGNATURE_BYTES]


def _signed_by_us(payload: bytes, signature: bytes) -> bool:
    return any(hmac.compare_digest(_signature(payload, key), signature) for key in service_keys())


def encode_cursor(ordering: tuple[str, ...], values: list[Any]) -> str:
    raw = json.dumps(
        {"o": list(ordering), "v": [_encode_value(v) for v in values]}, separators=(",", ":")
    ).encode()
    return f"{_b64(raw)}.{_b64(_signature(raw))}"


def decode_cursor(cursor: str, ordering: tuple[str, ...]) -> list[Any]:
    """The sort key a cursor carries; VALIDATION_ERROR on ``cursor`` unless this service signed it."""
    try:
        payload_b64, signature_b64 = cursor.split(".")
        payload = _unb64(payload_b64)
        if not _signed_by_us(payload, _unb64(signature_b64)):
            raise ValueError("cursor signature does not match")
        data = json.loads(payload)
        if data["o"] != list(ordering) or len(data["v"]) != len(ordering):
            raise ValueError("cursor made for another ordering")
        values = [_decode_value(v) for v in data["v"]]
        if any(v is None for v in values):
            raise ValueError("cursor without a sort key")  # sort keys are never NULL in a list
        return values
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise errors.ValidationFailed(
            "cursor is not a cursor this endpoint returned.", field="cursor", issue="invalid"
        ) from exc


def _after(ordering: tuple[str, ...], values: list[Any]) -> Q:
    """Rows strictly after ``values`` in ``ordering`` (each field may be descending with ``-``)."""
    condition = Q()
    for i in range(len(ordering) - 1, -1, -1):
        name = ordering[i].lstrip("-")
        op = "lt" if ordering[i].startswith("-") else "gt"
        step = Q(**{f"{name}__{op}": values[i]})
        if i < len(ordering) - 1:
            step |= Q(**{name: values[i]}) & condition
        condition = step
    # The first sort key bounded on its own as well: the database then starts its index scan at the
    # cursor instead of reading and discarding every row before it, so a page deep in a long list
    # costs what the first page costs (measured: make bench, "middle page" at 100,000 events).
    first, descending = ordering[0].lstrip("-"), ordering[0].startswith("-")
    return Q(**{f"{first}__{'lte' if descending else 'gte'}": values[0]}) & condition


def paginate(queryset: QuerySet, *, ordering: tuple[str, ...], limit: int, cursor: str | None) -> Page:
    """One query: the page plus one extra row to tell ``has_more``. The last ordering field must be unique."""
    qs = queryset.order_by(*ordering)
    if cursor:
        qs = qs.filter(_after(ordering, decode_cursor(cursor, ordering)))
    return page_of(list(qs[: limit + 1]), ordering=ordering, limit=limit)


def page_of(rows: list[Any], *, ordering: tuple[str, ...], limit: int) -> Page:
    """The page of ``rows``, read in ``ordering`` with one extra row to tell ``has_more`` (at most ``limit + 1``,
    each with the ordering's fields as attributes): a list read by :func:`paginate` or by a statement of its own."""
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if has_more and rows:
        last = rows[-1]
        next_cursor = encode_cursor(ordering, [getattr(last, f.lstrip("-")) for f in ordering])
    return Page(results=rows, has_more=has_more, next_cursor=next_cursor)


@dataclass
class TwoWayPage:
    """A page of a list read both ways: its rows and the cursors of the pages beside it (``None``: none)."""

    object_list: list[Any]
    newer: str | None  # the page before this one in the ordering: pass it as ``before``
    older: str | None  # the page after this one: pass it as ``after``


def _cursor_of(ordering: tuple[str, ...], row: Any) -> str:
    return encode_cursor(ordering, [getattr(row, f.lstrip("-")) for f in ordering])


def paginate_two_ways(
    queryset: QuerySet,
    *,
    ordering: tuple[str, ...],
    limit: int,
    after: str | None = None,
    before: str | None = None,
) -> TwoWayPage:
    """One query: the first page, the page after the cursor ``after`` or the one before ``before``, each read
    from the ordering's index at the cursor, so the hundredth page costs what the first costs. A page before
    that would be short is the first page. The last ordering field must be unique."""
    if before:
        values = decode_cursor(before, ordering)
        backwards = tuple(f[1:] if f.startswith("-") else f"-{f}" for f in ordering)
        rows = list(queryset.order_by(*backwards).filter(_after(backwards, values))[: limit + 1])
        if len(rows) > limit:
            rows = rows[:limit][::-1]
            return TwoWayPage(rows, newer=_cursor_of(ordering, rows[0]), older=_cursor_of(ordering, rows[-1]))
        after = None  # back at the start
    qs = queryset.order_by(*ordering)
    if after:
        values = decode_cursor(after, ordering)
        qs = qs.filter(_after(ordering, values))
    rows = list(qs[: limit + 1])
    older = _cursor_of(ordering, rows[limit - 1]) if len(rows) > limit else None
    newer = None
    if after:  # the page before starts at this page's first row (at the cursor itself past the last row)
        newer = _cursor_of(ordering, rows[0]) if rows else encode_cursor(ordering, values)
    return TwoWayPage(rows[:limit], newer=newer, older=older)


def keyset_batches(
    queryset: QuerySet, *, ordering: tuple[str, ...], fields: list[str], size: int
) -> Iterator[tuple[Any, ...]]:
    """Every row of ``queryset`` in ``ordering``, as tuples of ``fields``, read ``size`` rows a query, each query
    starting at the last row of the one before through the ordering's index: the first rows come at once, and no
    transaction or server-side cursor stays open between two batches. The last ordering field must be unique."""
    keys = [f.lstrip("-") for f in ordering]
    qs = queryset.order_by(*ordering).values_list(*fields, *keys)
    width = len(fields)
    after = None
    while True:
        batch = list((qs.filter(_after(ordering, after)) if after is not None else qs)[:size])
        for row in batch:
            yield row[:width]
        if len(batch) < size:
            return
        after = list(batch[-1][width:])
