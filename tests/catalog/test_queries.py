"""The catalog's reads written as SQL (catalog/queries.py): a row with its section and event, the one rule of the
best row, and a page of a section's rows as the ORM's list reads it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Row
from catalog.queries import CatalogRow, RowItem, row_best, row_by_pk, row_named, row_page
from catalog.selectors import ROW_ORDERING, row_list
from config.api.pagination import paginate

from .factories import EventFactory, RowFactory, SectionFactory

pytestmark = pytest.mark.django_db


def _as_catalog_row(row: Row) -> CatalogRow:
    stored = Row.objects.select_related("section__event").get(pk=row.pk)
    return CatalogRow.of(event=stored.section.event, section=stored.section, row=stored)


def test_a_row_by_its_name_and_by_its_key_with_the_orms_values(event):
    named = row_named(event_id=event.event_id, section_name="Lower 101", row_name="B")
    stored = Row.objects.get(section__event=event, name="B")
    assert named == _as_catalog_row(stored) == row_by_pk(stored.pk)
    assert row_named(event_id=event.event_id, section_name="Lower 101", row_name="Z") is None
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
