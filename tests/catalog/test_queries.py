"""The catalog's reads written as SQL (catalog/queries.py): a row with its section and event, the one rule of the
best row, and the pages of an event's sections and of a section's rows as the ORM's lists read them."""

import pytest
from django.db import connection
from django.db.models import IntegerField, Min, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.test.utils import CaptureQueriesContext

from catalog.models import Row, Section
from catalog.queries import (
    CatalogRow,
    RowItem,
    SectionItem,
    row_best,
    row_by_pk,
    row_page,
    row_quoted,
    section_page,
    section_rows,
)
from catalog.selectors import ROW_ORDERING, SECTION_ORDERING, row_list, section_list
from config.api.pagination import paginate

from .factories import EventFactory, RowFactory, SectionFactory

pytestmark = pytest.mark.django_db


def _as_catalog_row(row: Row) -> CatalogRow:
    stored = Row.objects.select_related("section__event").get(pk=row.pk)
    return CatalogRow.of(event=stored.section.event, section=stored.section, row=stored)


def named(event, row_name: str) -> CatalogRow | None:
    return row_quoted(
        event_id=event.event_id, section_name="Lower 101", row_name=row_name, quantity=1, found=None
    )


def test_a_row_by_its_name_and_by_its_key_with_the_orms_values(event):
    with CaptureQueriesContext(connection) as queries:
        found = named(event, "B")
    assert len(queries) == 1
    stored = Row.objects.get(section__event=event, name="B")
    assert found == _as_catalog_row(stored) == row_by_pk(stored.pk)
    assert named(event, "Z") is None
    assert row_by_pk(stored.pk + 1000) is None


def test_the_best_row_is_the_highest_offer_then_the_name_then_the_key(event):
    section = SectionFactory(event=event, name="Upper 301")
    RowFactory(section=section, name="A", offer_price="99.00", available_quantity=50)
    # D is written first (the lower key), C second: at one price, the name decides before the key.
    RowFactory(section=section, name="D", offer_price="120.00", available_quantity=5)
    first_by_name = RowFactory(section=section, name="C", offer_price="120.00", available_quantity=5)
    richest = RowFactory(section=section, name="E", offer_price="150.00", available_quantity=2)

    def best(quantity: int) -> CatalogRow | None:
        with CaptureQueriesContext(connection) as queries:
            found = row_best(event_id=event.event_id, section_name="Upper 301", quantity=quantity)
        assert len(queries) == 1
        return found

    assert best(2) == _as_catalog_row(richest)
    # E cannot take 3: of the rows at 120.00, the first by name.
    assert best(3) == _as_catalog_row(first_by_name)
    assert best(6).row_name == "A"
    assert best(51) is None
    assert row_best(event_id=event.event_id, section_name="Nowhere", quantity=1) is None
    # The section's rows, as a quote chooses from them, in the same order.
    assert [r.row_name for r in section_rows(event_id=event.event_id, section_name="Upper 301")] == [
        "E",
        "C",
        "D",
        "A",
    ]
    assert section_rows(event_id=event.event_id, section_name="Nowhere") == []


def _orm_rows(section) -> list[RowItem]:
    return [
        RowItem(*(getattr(row, name) for name in RowItem._fields))
        for row in Row.objects.filter(section=section).order_by(*ROW_ORDERING)
    ]


def test_a_page_of_rows_is_the_orms_list_page_after_page(event):
    """Every page, at every size, walked by the cursors the list hands out: the rows, values and cursors of the
    ORM's keyset pagination, each page in one statement."""
    section = SectionFactory(event=event, name="Mezzanine")
    # Names that sort apart from their keys: digits, a shared prefix, case, letters outside ASCII.
    for name in ("B2", "B10", "b1", "A", "Ä", "AA", "Z", "B1", "a", "Zz"):
        RowFactory(
            section=section,
            name=name,
            offer_price="99.90",
            face_value="120.00",
            restrictions=["obstructed_view"] if name.startswith("B") else [],
            restriction_detail="Behind a pillar" if name == "B10" else None,
        )
    SectionFactory(event=EventFactory(), name="Mezzanine")  # the same name at another event: not read
    expected = _orm_rows(section)
    assert len(expected) == 10 and expected[0].restrictions == [] and expected[0].restriction_detail is None
    for size in (1, 3, 4, 10, 50):
        walked, cursor, pages = [], None, 0
        while True:
            with CaptureQueriesContext(connection) as queries:
                page = row_list(event_id=event.event_id, section_name="Mezzanine", limit=size, cursor=cursor)
            assert len(queries) == 1
            orm = paginate(
                Row.objects.filter(section=section), ordering=ROW_ORDERING, limit=size, cursor=cursor
            )
            assert page.results == [RowItem(*(getattr(r, n) for n in RowItem._fields)) for r in orm.results]
            assert (page.has_more, page.next_cursor) == (orm.has_more, orm.next_cursor)
            walked += page.results
            pages += 1
            if not page.has_more:
                break
            cursor = page.next_cursor
        assert walked == expected
        assert pages == -(-len(expected) // size)


def test_a_page_of_rows_of_a_missing_event_or_section_is_empty(event):
    assert row_page(event_id=event.event_id, section_name="Nowhere", after=None, size=5) == []
    assert row_page(event_id="evt_missing", section_name="Lower 101", after=None, size=5) == []
    assert [
        row.name for row in row_page(event_id=event.event_id, section_name="Lower 101", after=None, size=5)
    ] == [
        "A",
        "B",
    ]
    assert [
        r.name for r in row_page(event_id=event.event_id, section_name="Lower 101", after=["A", 0], size=5)
    ] == [
        "A",
        "B",
    ]


def _orm_sections(event):
    """The sections list as the ORM reads it: each section's total quantity and its lowest offer among the rows
    with tickets left."""
    return Section.objects.filter(event=event).annotate(
        total_available=Coalesce(Sum("rows__available_quantity"), Value(0), output_field=IntegerField()),
        min_offer_price=Min("rows__offer_price", filter=Q(rows__available_quantity__gt=0)),
    )


def test_a_page_of_sections_is_the_orms_list_page_after_page(event):
    """Every page, at every size, walked by the cursors: the sections, their totals and lowest offers (none for a
    section without rows or with nothing left) and the cursors of the ORM's keyset pagination, one statement a
    page."""
    for name, rows in (
        ("Balcony 2", [("A", "80.00", 4), ("B", "75.50", 0)]),
        ("Balcony 10", [("A", "60.00", 0)]),  # nothing left: no lowest offer, a total of 0
        ("balcony 1", []),  # no rows at all
        ("Ärzte Loge", [("1", "300.00", 2), ("2", "250.25", 1), ("3", "199.99", 7)]),
        ("Zenith", [("GA", "45.00", 1000)]),
    ):
        section = SectionFactory(event=event, name=name)
        for row, price, quantity in rows:
            RowFactory(section=section, name=row, offer_price=price, available_quantity=quantity)
    RowFactory(section=SectionFactory(event=EventFactory(), name="Zenith"), name="GA")  # another event's
    expected = [
        SectionItem(*(getattr(s, n) for n in SectionItem._fields))
        for s in _orm_sections(event).order_by(*SECTION_ORDERING)
    ]
    assert len(expected) == 7
    by_name = {s.name: s for s in expected}
    assert (by_name["Balcony 10"].total_available, by_name["Balcony 10"].min_offer_price) == (0, None)
    assert (by_name["balcony 1"].total_available, by_name["balcony 1"].min_offer_price) == (0, None)
    assert (
        str(by_name["Ärzte Loge"].min_offer_price) == "199.99" and by_name["Ärzte Loge"].total_available == 10
    )
    for size in (1, 2, 3, 7, 50):
        walked, cursor = [], None
        while True:
            with CaptureQueriesContext(connection) as queries:
                page = section_list(event_id=event.event_id, limit=size, cursor=cursor)
            assert len(queries) == 1
            orm = paginate(_orm_sections(event), ordering=SECTION_ORDERING, limit=size, cursor=cursor)
            assert page.results == [
                SectionItem(*(getattr(s, n) for n in SectionItem._fields)) for s in orm.results
            ]
            assert (page.has_more, page.next_cursor) == (orm.has_more, orm.next_cursor)
            walked += page.results
            if not page.has_more:
                break
            cursor = page.next_cursor
        assert walked == expected


def test_a_page_of_sections_of_a_missing_event_is_empty(event):
    assert section_page(event_id="evt_missing", after=None, size=5) == []
    assert [s.name for s in section_page(event_id=event.event_id, after=None, size=5)] == [
        "Floor GA",
        "Lower 101",
    ]
    assert [s.name for s in section_page(event_id=event.event_id, after=["Floor GA", 10**9], size=5)] == [
        "Lower 101"
    ]
