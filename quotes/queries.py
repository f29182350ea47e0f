"""Quotes' reads on the order path, written as SQL (``config.core.rawsql``): a quote with its event, as order
creation judges and copies it, in one query.

Each statement's columns are named: the list that writes its ``SELECT`` also names the fields of the tuple its
rows come back as, so no caller counts positions.
"""

from collections import namedtuple
from datetime import datetime
from typing import Any, NamedTuple

from catalog.models import Event
from catalog.queries import ROW_ALIASES, ROW_COLUMNS, ROW_FROM, CatalogRow
from config.core import rawsql

from .models import ORDER_SNAPSHOT_FIELDS, Quote

# What the checks read, then what the order copies.
_QUOTE_FIELDS = ("id", "partner", "row", "expires_at", "consumed_at", *ORDER_SNAPSHOT_FIELDS)
# The event's columns an order uses at creation (the checks and the rendering); the rest stay deferred.
_EVENT_FIELDS = ("id", "event_id", "name", "starts_at", "timezone", "event_date", "primary_site", "status")
_EVENT_ATTNAMES = [Event._meta.get_field(name).attname for name in _EVENT_FIELDS]

# Column label -> (table alias, field), in the order of each SELECT.
_QUOTE_COLUMNS = {f"quote__{f.attname}": ("q", f) for f in map(Quote._meta.get_field, _QUOTE_FIELDS)}
_EVENT_COLUMNS = {f"event__{f.attname}": ("e", f) for f in map(Event._meta.get_field, _EVENT_FIELDS)}
_CATALOG_COLUMNS = {
    label: (ROW_ALIASES[f.model], f) for label, f in zip(CatalogRow._fields, ROW_COLUMNS, strict=True)
}


class _Named(NamedTuple):
    select: rawsql.Select
    row: type


def _named(source: str, *groups: dict[str, tuple[str, Any]]) -> _Named:
    """``SELECT <the groups' columns> <source>``, its rows as tuples whose fields are the columns' labels."""
    columns = {label: column for group in groups for label, column in group.items()}
    if len(columns) != sum(map(len, groups)):
        raise ValueError("two columns share a label")
    selected = ", ".join(f"{alias}.{field.column}" for alias, field in columns.values())
    return _Named(
        rawsql.Select(f"SELECT {selected} {source}", [field for _, field in columns.values()]),  # noqa: S608
        namedtuple("Row", columns),
    )


# Table names from the models, values as parameters.
_QUOTE_AND_EVENT = _named(
    f"FROM {Quote._meta.db_table} q JOIN {Event._meta.db_table} e ON e.id = q.event_id"
    " WHERE q.id = %s AND q.livemode = %s",
    _QUOTE_COLUMNS,
    _EVENT_COLUMNS,
)
# A self-contained quote id (quotes/codec.py) names its row: the event through the catalog's row, with the quote
# if its row is written, and the catalog's columns that rebuild a quote Redis lost.
_ROW_AND_QUOTE = _named(
    f"FROM {ROW_FROM} LEFT JOIN {Quote._meta.db_table} q ON q.id = %s WHERE r.id = %s",
    _QUOTE_COLUMNS,
    _EVENT_COLUMNS,
    _CATALOG_COLUMNS,
)


class QuoteToOrder(NamedTuple):
    """A quote as an order is made of it: what the checks read, what the order copies (``snapshot``:
    ``ORDER_SNAPSHOT_FIELDS``, the restrictions as a list of its own) and its event (the columns an order uses at
    creation; the rest deferred). ``unwritten``: the quote itself, when its row is not in the database yet."""

    pk: int
    partner_pk: int
    row_pk: int
    expires_at: datetime
    consumed_at: datetime | None
    snapshot: dict[str, Any]
    event: Event
    unwritten: Quote | None = None

    @classmethod
    def of_unwritten(cls, quote: Quote, *, event: Event) -> "QuoteToOrder":
        return cls(
            quote.pk,
            quote.partner_id,
            quote.row_id,
            quote.expires_at,
            quote.consumed_at,
            quote.order_snapshot(),
            event,
            quote,
        )


def _event(found) -> Event:
    return Event.from_db("default", _EVENT_ATTNAMES, [getattr(found, f"event__{a}") for a in _EVENT_ATTNAMES])


def _to_order(found, event: Event) -> QuoteToOrder:
    snapshot = {name: getattr(found, f"quote__{name}") for name in ORDER_SNAPSHOT_FIELDS}
    snapshot["restrictions"] = list(snapshot["restrictions"] or [])
    return QuoteToOrder(
        found.quote__id,
        found.quote__partner_id,
        found.quote__row_id,
        found.quote__expires_at,
        found.quote__consumed_at,
        snapshot,
        event,
    )


def quote_to_order(*, quote_pk: int, livemode: bool) -> QuoteToOrder | None:
    """The written quote of this mode with its event, in one query; None when there is none."""
    found = _QUOTE_AND_EVENT.select.fetchone([quote_pk, livemode])
    if found is None:
        return None
    found = _QUOTE_AND_EVENT.row._make(found)
    return _to_order(found, _event(found))


class RowAndQuote(NamedTuple):
    """What a self-contained quote id's query finds: the quote if its row is written, the event, and the
    catalog's row (which rebuilds the quote otherwise)."""

    quote: QuoteToOrder | None
    event: Event
    row: CatalogRow


def row_and_quote(*, quote_pk: int, row_pk: int) -> RowAndQuote | None:
    """The quote ``quote_pk`` if its row is written, and the catalog's row ``row_pk`` with its event, in one
    query; None when that row is gone from the catalog."""
    found = _ROW_AND_QUOTE.select.fetchone([quote_pk, row_pk])
    if found is None:
        return None
    found = _ROW_AND_QUOTE.row._make(found)
    event = _event(found)
    return RowAndQuote(
        None if found.quote__id is None else _to_order(found, event),
        event,
        CatalogRow(*(getattr(found, label) for label in CatalogRow._fields)),
    )
