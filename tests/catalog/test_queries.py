"""The catalog's reads on the quote and order paths (catalog/queries.py): a row with its section and event, and
the one rule of the best row."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Row
from catalog.queries import CatalogRow, row_best, row_by_pk, row_named

from .factories import RowFactory, SectionFactory

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
