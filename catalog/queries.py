"""The catalog's hottest reads, written as SQL: on the quote and order paths a row with its section and event,
found by its key, as the best row of a section for a quantity, or among a section's rows (which a quote chooses
from, :func:`row_quoted`, in the best row's order); on the catalog's own path a page of
an event's sections with their totals (:func:`section_page`) and a page of a section's rows (:func:`row_page`),
built whenever an order moves the event's availability.

Plain SQL naming only the columns a quote uses: the ORM's version of this join (27 columns, and the four-column
ORDER BY the models' default orderings add) spent more time compiling than the database spent answering, on
every quote. ``rawsql.Select`` gives the values the ORM would (an aware ``starts_at``, ``Decimal`` prices,
``bool`` and decoded JSON) on PostgreSQL.

The best row for a quantity is one rule (``BEST_ROW_ORDER``), in :func:`row_best`'s SQL and in the order of
:func:`section_rows`: of the rows that can take the quantity, the highest offer, then the row's name, then its key.
"""

from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from config.core import rawsql

from . import cache as catalog_cache
from .models import Event, Row, Section


class CatalogRow(NamedTuple):
    """One row with its section and event: what a quote takes from the catalog (``ROW_COLUMNS``, in order)."""

    row_pk: int
    row_name: str
    row_name_display: str
    available_quantity: int
    offer_price: Decimal
    face_value: Decimal
    restrictions: list
    restriction_detail: str | None
    section_pk: int
    section_name: str
    section_name_display: str
    general_admission: bool
    event_pk: int
    event_name: str
    primary_site: str
    event_status: str
    starts_at: datetime

    @classmethod
    def of(cls, *, event: Event, section: Section, row: Row) -> "CatalogRow":
        return cls(
            row.pk,
            row.name,
            row.name_display,
            row.available_quantity,
            row.offer_price,
            row.face_value,
            row.restrictions,
            row.restriction_detail,
            section.pk,
            section.name,
            section.name_display,
            section.general_admission,
            event.pk,
            event.name,
            event.primary_site,
            event.status,
            event.starts_at,
        )


def _fields(model, *names: str) -> list:
    return [model._meta.get_field(name) for name in names]


# The columns of ``CatalogRow``, in its order; ``ROW_ALIASES`` names their tables in ``ROW_FROM``.
ROW_COLUMNS = [
    *_fields(Row, "id", "name", "name_display", "available_quantity"),
    *_fields(Row, "offer_price", "face_value", "restrictions", "restriction_detail"),
    *_fields(Section, "id", "name", "name_display", "general_admission"),
    *_fields(Event, "id", "name", "primary_site", "status", "starts_at"),
]
ROW_ALIASES = {Row: "r", Section: "s", Event: "e"}
ROW_SELECTED = ", ".join(f"{ROW_ALIASES[f.model]}.{f.column}" for f in ROW_COLUMNS)
ROW_FROM = (
    f"{Row._meta.db_table} r JOIN {Section._meta.db_table} s ON s.id = r.section_id"
    f" JOIN {Event._meta.db_table} e ON e.id = s.event_id"
)

# The best row, as the ORM's ``order_by`` names it: the highest offer, then the name, then the key.
BEST_ROW_ORDER = ("-offer_price", "name", "id")
_BEST_ROW_ORDER_BY = ", ".join(
    f"r.{Row._meta.get_field(name.lstrip('-')).column}{' DESC' if name.startswith('-') else ''}"
    for name in BEST_ROW_ORDER
)

# Table names from the models, values as parameters.
_IN_SECTION = f"SELECT {ROW_SELECTED} FROM {ROW_FROM} WHERE e.event_id = %s AND s.name = %s"  # noqa: S608
_BEST_ROW = rawsql.Select(
    _IN_SECTION + f" AND r.available_quantity >= %s ORDER BY {_BEST_ROW_ORDER_BY} LIMIT 1", ROW_COLUMNS
)
_ROW_BY_PK = rawsql.Select(f"SELECT {ROW_SELECTED} FROM {ROW_FROM} WHERE r.id = %s", ROW_COLUMNS)  # noqa: S608
_SECTION_ROWS = rawsql.Select(_IN_SECTION + f" ORDER BY {_BEST_ROW_ORDER_BY}", ROW_COLUMNS)


def _row(select: rawsql.Select, params: list) -> CatalogRow | None:
    found = select.fetchone(params)
    return None if found is None else CatalogRow(*found)


def row_best(*, event_id: str, section_name: str, quantity: int) -> CatalogRow | None:
    """The best row of the event's section ``section_name`` that can take ``quantity`` (``BEST_ROW_ORDER``), in
    one query; None when the event or section is missing or no row can take it."""
    return _row(_BEST_ROW, [event_id, section_name, quantity])


def section_rows(*, event_id: str, section_name: str) -> list[CatalogRow]:
    """Every row of the event's section ``section_name``, in ``BEST_ROW_ORDER`` (so the first that can take a
    quantity is :func:`row_best`'s), in one query; empty when the event or section is missing or has no rows."""
    return [CatalogRow(*found) for found in _SECTION_ROWS.fetchall([event_id, section_name])]


def quote_read_keys(event_id: str) -> list[str]:
    """What a quote's first round trip reads for :func:`row_quoted`: the catalog's and the event's versions."""
    return catalog_cache.stamp_keys(event_id)


def row_quoted(
    *, event_id: str, section_name: str, row_name: str | None, quantity: int, found: dict | None
) -> CatalogRow | None:
    """The section's row named ``row_name``, or (``None``) the one :func:`row_best` gives for ``quantity``,
    chosen among the section's rows (:func:`section_rows`) that this process holds while the versions in
    ``found`` (:func:`quote_read_keys`, read in the request's first round trip) are current, else read now
    (``found`` ``None``: nothing is held); None when there is no such row (or event, or section)."""
    rows = catalog_cache.held(
        _quote_rows_key(event_id, section_name),
        lambda: section_rows(event_id=event_id, section_name=section_name),
        event_id=event_id,
        found=found,
    )
    return _row_chosen(rows, row_name=row_name, quantity=quantity)


def row_held(
    *, event_id: str, section_name: str, row_name: str | None, quantity: int, found: dict
) -> CatalogRow | None:
    """:func:`row_quoted`'s row when this process holds the section's rows under exactly the versions in
    ``found``; ``None`` when it holds none (nothing is read) or they hold no such row."""
    rows = catalog_cache.held_now(_quote_rows_key(event_id, section_name), event_id=event_id, found=found)
    return None if rows is None else _row_chosen(rows, row_name=row_name, quantity=quantity)


def _quote_rows_key(event_id: str, section_name: str) -> str:
    return catalog_cache.entry_key("quote-rows", event_id, section_name)


def _row_chosen(rows: list[CatalogRow], *, row_name: str | None, quantity: int) -> CatalogRow | None:
    if row_name is None:
        return next((row for row in rows if row.available_quantity >= quantity), None)
    return next((row for row in rows if row.row_name == row_name), None)


def row_by_pk(row_pk: int) -> CatalogRow | None:
    """The row by its primary key, with its section and event; None when it is gone."""
    return _row(_ROW_BY_PK, [row_pk])


def _after_name(alias: str) -> str:
    """Rows of ``alias`` strictly after a cursor's ``[name, id]`` in the lists' order (name, then key), as the
    lists' keyset pagination reads them (``config.api.pagination``): the name bounded on its own as well, so the
    scan starts at the cursor in the name's index. Its parameters: :func:`_page`."""
    return f" AND {alias}.name >= %s AND ({alias}.name > %s OR ({alias}.name = %s AND {alias}.id > %s))"


def _page(
    first: rawsql.Select, following: rawsql.Select, params: list, *, after: list | None, size: int
) -> list:
    """A keyset page: ``first`` (no cursor) or ``following`` (its statement with :func:`_after_name`), each with
    ``params``, then the cursor's, then the page's size."""
    if after is None:
        return first.fetchall([*params, size])
    name, pk = after
    return following.fetchall([*params, name, name, name, pk, size])


class SectionItem(NamedTuple):
    """One section of an event's page: what the sections list shows (``catalog.serializers.section_data``) and its
    cursor reads (``name``, ``id``)."""

    id: int
    name: str
    name_display: str
    general_admission: bool
    total_available: int
    min_offer_price: Decimal | None


# An event's sections by name, then key, the event found by its public id in the same statement; each section's
# totals summed over its own rows once the page is chosen (a LATERAL join), so a page costs the same whatever the
# event's size (``p``: the page's sections, ``e``: the event, ``r``: a section's rows). The totals' columns are
# read as the row fields they sum (no converter either way).
_SECTION_COLUMNS = [
    *_fields(Section, "id", "name", "name_display", "general_admission"),
    *_fields(Row, "available_quantity", "offer_price"),
]
_SECTIONS_OF_EVENT = (
    f"SELECT p.id, p.name, p.name_display, p.general_admission FROM {Section._meta.db_table} p"  # noqa: S608
    f" WHERE p.event_id = (SELECT e.id FROM {Event._meta.db_table} e WHERE e.event_id = %s)"
)
_SECTION_PAGE_SQL = (
    "SELECT s.id, s.name, s.name_display, s.general_admission, t.total_available, t.min_offer_price"  # noqa: S608
    " FROM ({sections} ORDER BY p.name, p.id LIMIT %s) s CROSS JOIN LATERAL ("
    " SELECT COALESCE(SUM(r.available_quantity), 0) AS total_available,"
    " MIN(r.offer_price) FILTER (WHERE r.available_quantity > 0) AS min_offer_price"
    f" FROM {Row._meta.db_table} r WHERE r.section_id = s.id) t"
    " ORDER BY s.name, s.id"
)
_SECTION_PAGE = rawsql.Select(_SECTION_PAGE_SQL.format(sections=_SECTIONS_OF_EVENT), _SECTION_COLUMNS)
_SECTION_PAGE_AFTER = rawsql.Select(
    _SECTION_PAGE_SQL.format(sections=_SECTIONS_OF_EVENT + _after_name("p")),
    _SECTION_COLUMNS,
)


def section_page(*, event_id: str, after: list | None, size: int) -> list[SectionItem]:
    """Up to ``size`` sections of the event in the list's order (name, then key), strictly after ``after`` (the
    ``[name, id]`` of a cursor) when given, each with its rows' total quantity and lowest offer among the rows with
    tickets left, in one query. Empty when the event is missing, as when the page is."""
    found = _page(_SECTION_PAGE, _SECTION_PAGE_AFTER, [event_id], after=after, size=size)
    return [SectionItem(*section) for section in found]


class RowItem(NamedTuple):
    """One row of a section's page: what the rows list shows (``catalog.serializers.row_data``) and its cursor
    reads (``name``, ``id``), named as the model's fields."""

    id: int
    name: str
    name_display: str
    available_quantity: int
    offer_price: Decimal
    face_value: Decimal
    restrictions: list
    restriction_detail: str | None


# A section's rows by name, then key (the list's ordering, the index of the row's unique name), the section found
# by its event's public id and its name in the same statement; after a cursor, from the index at the cursor on.
_PAGE_COLUMNS = _fields(Row, *RowItem._fields)
_PAGE_SELECTED = ", ".join(f"r.{f.column}" for f in _PAGE_COLUMNS)
_PAGE_SECTION = (
    f"SELECT s.id FROM {Section._meta.db_table} s JOIN {Event._meta.db_table} e ON e.id = s.event_id"  # noqa: S608
    " WHERE e.event_id = %s AND s.name = %s"
)
_PAGE_WHERE = f"SELECT {_PAGE_SELECTED} FROM {Row._meta.db_table} r WHERE r.section_id = ({_PAGE_SECTION})"  # noqa: S608
_PAGE_ORDER = " ORDER BY r.name, r.id LIMIT %s"
_ROW_PAGE = rawsql.Select(_PAGE_WHERE + _PAGE_ORDER, _PAGE_COLUMNS)
_ROW_PAGE_AFTER = rawsql.Select(
    _PAGE_WHERE + _after_name("r") + _PAGE_ORDER,
    _PAGE_COLUMNS,
)


def row_page(*, event_id: str, section_name: str, after: list | None, size: int) -> list[RowItem]:
    """Up to ``size`` rows of the event's section ``section_name`` in the list's order (name, then key),
    strictly after ``after`` (the ``[name, id]`` of a cursor) when given, in one query. Empty when the event or
    the section is missing, as when the page is."""
    found = _page(_ROW_PAGE, _ROW_PAGE_AFTER, [event_id, section_name], after=after, size=size)
    return [RowItem(*row) for row in found]
