"""Streamed CSV downloads of the portal: constant memory for any number of rows.

Cells are text a spreadsheet will open: money as plain decimals with two places, instants as ISO 8601 in
the partner's time zone with the offset, and any cell a spreadsheet would read as a formula neutralised.

The lists' exports (orders, payouts) have each line written by PostgreSQL (``CsvLine``): the same bytes as
``csv_cell`` and ``csv.writer`` give, at the cost of one string a row in the web process whatever the columns.
A column of a kind the SQL does not format, a zone PostgreSQL does not know, or one whose rules the server's tz
database gives otherwise than Python's, is formatted here instead.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo

from django.db import DatabaseError, connection, transaction
from django.db.models import Expression, F, Field, QuerySet, TextField
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


def _formatted_lines(rows: Iterable[Iterable[object]], *, tz: ZoneInfo) -> Iterator[str]:
    """``rows`` formatted by csv_cell and written by csv.writer, a chunk of lines at a time: one write to the
    client per chunk, not per row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for number, row in enumerate(rows, start=1):
        writer.writerow([csv_cell(value, tz=tz) for value in row])
        if number % EXPORT_CHUNK_SIZE == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


def _streaming_csv(filename: str, lines: Iterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def csv_response(
    *, filename: str, header: list[str], rows: Callable[[], Iterable[Iterable[object]]], tz: ZoneInfo
) -> StreamingHttpResponse:
    """Stream ``header`` then each row of ``rows()``; ``rows`` is called only once streaming starts.

    Streaming runs after the view has returned, when the portal's time zone is no longer active: it is
    activated again around the query so date filters mean the same days as on the page.
    """

    def lines() -> Iterator[str]:
        # The header at once, then the rows a chunk at a time.
        yield csv.writer(_Echo()).writerow(header)
        with timezone.override(tz):
            yield from _formatted_lines(rows(), tz=tz)

    return _streaming_csv(filename, lines())


# --- lines written by PostgreSQL ---------------------------------------------------------------------------------
# Each template formats the value ``{v}`` as csv_cell does, then quotes it as csv.writer's minimal quoting does: a
# cell holding a comma, a double quote, a carriage return or a line feed is quoted, its quotes doubled. NULL is the
# empty cell. Dates, instants and offsets are read from their text in the ISO date style and the postgres interval
# style (checked before each export). No percent sign: the statement goes through the driver's placeholders.
_TO_QUOTE = "E'[,\"\\r\\n]'"
_SQL_TEXT = (
    # The common cell first: nothing to quote and no formula start, the value as it is.
    "COALESCE(CASE WHEN {v} !~ E'[,\"\\r\\n]|^[-=+@\\t\\r]' THEN {v} "
    "WHEN {v} ~ " + _TO_QUOTE + " THEN '\"' || "
    "CASE WHEN {v} ~ E'^[-=+@\\t\\r]' THEN '''' ELSE '' END || replace({v}, '\"', '\"\"') || '\"' "
    "ELSE '''' || {v} END, '')"
)
_SQL_INTEGER = "COALESCE(CASE WHEN {v} < 0 THEN '''' ELSE '' END || {v}::text, '')"
_SQL_DECIMAL = "COALESCE({v}::text, '')"  # a column of two places: its text has them (csv_cell's quantize)
_SQL_DATE = "COALESCE({v}::text, '')"
# An instant in the zone ``{tz}`` to the second (truncated), then the zone's offset at that instant, written as
# Python's isoformat writes it: ±HH:MM, and :SS only when the offset has seconds. The offset's text is
# [-]HH:MM:SS: a sign is put in front of it, then the seconds are dropped when they are :00.
_SQL_INSTANT = (
    "COALESCE(overlay(left(({v} AT TIME ZONE {tz})::text, 19) placing 'T' from 11) || "
    "replace(replace(replace('+' || (({v} AT TIME ZONE {tz}) - ({v} AT TIME ZONE 'UTC'))::text || '#', "
    "':00#', ''), '#', ''), '+-', '-'), '')"
)
_SQL_BY_KIND = {
    "CharField": _SQL_TEXT,
    "TextField": _SQL_TEXT,
    "SlugField": _SQL_TEXT,
    "URLField": _SQL_TEXT,
    "SmallIntegerField": _SQL_INTEGER,
    "IntegerField": _SQL_INTEGER,
    "BigIntegerField": _SQL_INTEGER,
    "PositiveSmallIntegerField": _SQL_INTEGER,
    "PositiveIntegerField": _SQL_INTEGER,
    "PositiveBigIntegerField": _SQL_INTEGER,
    "AutoField": _SQL_INTEGER,
    "BigAutoField": _SQL_INTEGER,
    "DateField": _SQL_DATE,
    "DateTimeField": _SQL_INSTANT,
}
# The zone's name goes into the statement as a literal: only the characters of the tz database's names.
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-/]+")


def _cell_template(field: Field) -> str | None:
    """The SQL formatting a column of ``field``'s kind; None for a kind only csv_cell formats."""
    kind = field.get_internal_type()
    if kind == "DecimalField":
        return _SQL_DECIMAL if field.decimal_places == 2 else None
    return _SQL_BY_KIND.get(kind)


class CsvLine(Expression):
    """One CSV line, its terminator included, of the columns ``fields`` (lookups such as ``event__name``), each
    formatted by its ``templates`` in the zone ``tz``."""

    output_field = TextField()

    def __init__(self, fields: list[str], templates: list[str], *, tz: ZoneInfo) -> None:
        super().__init__()
        if not _ZONE_NAME.fullmatch(tz.key):
            raise ValueError(f"not a zone name: {tz.key!r}")
        self.sources = [F(field) for field in fields]
        self.templates = templates
        self.tz = tz

    def get_source_expressions(self):
        return self.sources

    def set_source_expressions(self, exprs):
        self.sources = list(exprs)

    def as_sql(self, compiler, connection):
        zone = f"'{self.tz.key}'"
        cells, params = [], []
        for source, template in zip(self.sources, self.templates, strict=True):
            sql, source_params = compiler.compile(source)
            cells.append(template.replace("{tz}", zone).replace("{v}", f"({sql})"))
            params.extend(list(source_params) * template.count("{v}"))
        return "(" + " || ',' || ".join(cells) + " || chr(13) || chr(10))", params


def _line_templates(queryset: QuerySet, fields: list[str]) -> list[str] | None:
    """Each column's SQL formatting, or None when one of them is formatted in Python only."""
    templates = [_cell_template(column.output_field) for column in queryset.values_list(*fields).query.select]
    return None if None in templates else templates  # type: ignore[return-value]


# The instants at which the server's tz database must give a zone the offset Python's gives it before the server
# writes instants in that zone: noon UTC on the 1st and the 15th of every month from 1850 to 2040. Builds of the tz
# database differ: an older one lacks a recent change of rules, and one built without its "backzone" history
# merges zones before 1970 (PostgreSQL's own build reads Europe/Amsterdam as Brussels then, +00:17:30 where
# Debian's reads +00:19:32). Every change of rules lasts longer than a fortnight, so a difference shows here.
_AGREEMENT_SQL = (
    "SELECT extract(epoch FROM (t AT TIME ZONE %s) - (t AT TIME ZONE 'UTC'))::int FROM ("
    "SELECT (d + shift) AT TIME ZONE 'UTC' AS t, d, shift FROM generate_series("
    "timestamp '1850-01-01 12:00', timestamp '2040-12-01 12:00', interval '1 month') AS d "
    "CROSS JOIN (VALUES (interval '0 days'), (interval '14 days')) AS shifts(shift)) AS instants ORDER BY d, shift"
)


@lru_cache(maxsize=64)
def _python_offsets(key: str) -> tuple[int, ...]:
    """Python's offsets of the zone ``key`` at ``_AGREEMENT_SQL``'s instants, in seconds, in its order."""
    zone = ZoneInfo(key)
    return tuple(
        int(datetime(year, month, day, 12, tzinfo=UTC).astimezone(zone).utcoffset().total_seconds())
        for year in range(1850, 2041)
        for month in range(1, 13)
        for day in (1, 15)
    )


def _database_writes_lines(tz: ZoneInfo) -> bool:
    """Whether PostgreSQL renders instants in ``tz`` as Python does (a name Python's tz database knows may be
    missing from the server's, or read by other rules), and dates and intervals in the styles the templates
    read."""
    key = getattr(tz, "key", None)
    if not key or not _ZONE_NAME.fullmatch(key):
        return False
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('DateStyle'), current_setting('IntervalStyle')")
            date_style, interval_style = cursor.fetchone()
            cursor.execute(_AGREEMENT_SQL, [key])
            offsets = tuple(row[0] for row in cursor.fetchall())
    except DatabaseError:
        return False
    styles = date_style.startswith("ISO") and interval_style == "postgres"
    return styles and offsets == _python_offsets(key)


def queryset_csv_response(
    *,
    filename: str,
    columns: tuple[tuple[str, str], ...],
    queryset: Callable[[], QuerySet],
    ordering: tuple[str, ...],
    tz: ZoneInfo,
) -> StreamingHttpResponse:
    """Stream the rows of ``queryset()`` in ``ordering`` as ``columns`` (header, field), read
    ``EXPORT_BATCH_SIZE`` rows a query through the list's index from where the last batch ended
    (``config.api.pagination.keyset_batches``), so the first rows leave at once whatever the size and no
    transaction stays open while the client reads. Each row is one line PostgreSQL wrote (``CsvLine``), never a
    model instance; plain values formatted by csv_cell where the SQL cannot format a column or the zone."""
    fields = [field for _, field in columns]
    header = [column for column, _ in columns]

    def lines() -> Iterator[str]:
        yield csv.writer(_Echo()).writerow(header)
        with timezone.override(tz):
            base = queryset()
            templates = _line_templates(base, fields)
            if templates is None or not _database_writes_lines(tz):
                rows = keyset_batches(base, ordering=ordering, fields=fields, size=EXPORT_BATCH_SIZE)
                yield from _formatted_lines(rows, tz=tz)
                return
            written = base.annotate(csv_line=CsvLine(fields, templates, tz=tz))
            chunk: list[str] = []
            for (line,) in keyset_batches(
                written, ordering=ordering, fields=["csv_line"], size=EXPORT_BATCH_SIZE
            ):
                chunk.append(line)
                if len(chunk) == EXPORT_CHUNK_SIZE:
                    yield "".join(chunk)
                    chunk = []
            if chunk:
                yield "".join(chunk)

    return _streaming_csv(filename, lines())


def dated_filename(prefix: str, *, tz: ZoneInfo) -> str:
    return f"{prefix}-{timezone.now().astimezone(tz).date().isoformat()}.csv"
