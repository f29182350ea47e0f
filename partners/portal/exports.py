"""Streamed CSV downloads of the portal: constant memory for any number of rows.

Cells are text a spreadsheet will open: money as plain decimals with two places, instants as ISO 8601 in
the partner's time zone with the offset, and any cell a spreadsheet would read as a formula neutralised.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from config.api.pagination import keyset_batches

# A cell starting with one of these is read as a formula by spreadsheets (CSV injection); tab and carriage
# return are on OWASP's list too.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Rows written to the client at a time, and rows read per query: memory stays flat whatever the size.
EXPORT_CHUNK_SIZE = 500
EXPORT_BATCH_SIZE = 2000


_CENT = Decimal("0.01")


def csv_cell(value: object, *, tz: ZoneInfo) -> str:
    # The most frequent kinds first: a cell is formatted for every column of every row.
    if value is None:
        return ""
    if type(value) is str:
        return "'" + value if value.startswith(FORMULA_STARTS) else value
    if isinstance(value, Decimal):
        return str(value.quantize(_CENT))
    if isinstance(value, datetime):
        return value.astimezone(tz).isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class _Echo:
    """A file-like object whose ``write`` hands back the line csv.writer produced."""

    def write(self, value: str) -> str:
        return value


def csv_response(
    *, filename: str, header: list[str], rows: Callable[[], Iterable[Iterable[object]]], tz: ZoneInfo
) -> StreamingHttpResponse:
    """Stream ``header`` then each row of ``rows()``; ``rows`` is called only once streaming starts.

    Streaming runs after the view has returned, when the portal's time zone is no longer active: it is
    activated again around the query so date filters mean the same days as on the page.
    """

    def lines() -> Iterator[str]:
        # The header at once, then the rows a chunk at a time: one write to the client per chunk, not per row.
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        yield csv.writer(_Echo()).writerow(header)
        with timezone.override(tz):
            for number, row in enumerate(rows(), start=1):
                writer.writerow([csv_cell(value, tz=tz) for value in row])
                if number % EXPORT_CHUNK_SIZE == 0:
                    yield buffer.getvalue()
                    buffer.seek(0)
                    buffer.truncate()
        if buffer.tell():
            yield buffer.getvalue()

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def queryset_csv_response(
    *,
    filename: str,
    columns: tuple[tuple[str, str], ...],
    queryset: Callable[[], QuerySet],
    ordering: tuple[str, ...],
    tz: ZoneInfo,
) -> StreamingHttpResponse:
    """Stream the rows of ``queryset()`` in ``ordering`` as ``columns`` (header, field): plain values, never a
    model instance per row, read ``EXPORT_BATCH_SIZE`` rows a query through the list's index from where the
    last batch ended (``config.api.pagination.keyset_batches``), so the first rows leave at once whatever the
    size and no transaction stays open while the client reads."""
    fields = [field for _, field in columns]

    def rows() -> Iterable[tuple]:
        return keyset_batches(queryset(), ordering=ordering, fields=fields, size=EXPORT_BATCH_SIZE)

    return csv_response(filename=filename, header=[column for column, _ in columns], rows=rows, tz=tz)


def dated_filename(prefix: str, *, tz: ZoneInfo) -> str:
    return f"{prefix}-{timezone.now().astimezone(tz).date().isoformat()}.csv"
