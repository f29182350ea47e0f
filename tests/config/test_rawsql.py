"""``config.core.rawsql.Select``: plain SQL that answers what the ORM would."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Event, Row, Section
from catalog.queries import CatalogRow, row_quoted
from config.core import rawsql
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory

pytestmark = pytest.mark.django_db

COLUMNS = [
    Event._meta.get_field("starts_at"),
    Event._meta.get_field("event_date"),
    Event._meta.get_field("canceled_at"),
    Section._meta.get_field("general_admission"),
    Row._meta.get_field("offer_price"),
    Row._meta.get_field("restrictions"),
    Row._meta.get_field("available_quantity"),
]
SELECT = rawsql.Select(
    f"""
    SELECT e.starts_at, e.event_date, e.canceled_at, s.general_admission, r.offer_price, r.restrictions,
           r.available_quantity
      FROM {Row._meta.db_table} r
      JOIN {Section._meta.db_table} s ON s.id = r.section_id
      JOIN {Event._meta.db_table} e ON e.id = s.event_id
     WHERE e.id = %s
     ORDER BY r.name
    """,  # noqa: S608 - table names from the models
    COLUMNS,
)


@pytest.fixture
def event():
    starts_at = datetime(2021, 6, 14, 23, 30, 15, 250000, tzinfo=UTC)
    event = EventFactory(starts_at=starts_at)
    floor = SectionFactory(event=event, name="Floor", general_admission=True)
    RowFactory(section=floor, name="A", offer_price=Decimal("142.25"), restrictions=["Obstructed view"])
    lower = SectionFactory(event=event, name="Lower", general_admission=False)
    RowFactory(section=lower, name="B", offer_price=Decimal("99.10"), restrictions=[])
    return event


def test_select_answers_the_orms_types(event):
    first, second = SELECT.fetchall([event.pk])
    starts_at, event_date, canceled_at, general, offer, restrictions, available = first
    assert isinstance(starts_at, datetime) and starts_at.utcoffset() == timedelta(0)
    assert starts_at == datetime(2021, 6, 14, 23, 30, 15, 250000, tzinfo=UTC)
    assert event_date == event.event_date
    assert canceled_at is None
    assert general is True and second[3] is False
    assert isinstance(offer, Decimal) and str(offer) == "142.25"
    assert str(second[4]) == "99.10"  # the field's two decimal places, as the ORM gives them
    assert restrictions == ["Obstructed view"] and second[5] == []
    assert available == 10 and isinstance(available, int)


def test_select_answers_exactly_what_the_orm_reads(event):
    orm = list(
        Row.objects.filter(section__event=event)
        .order_by("name")
        .values_list(
            "section__event__starts_at",
            "section__event__event_date",
            "section__event__canceled_at",
            "section__general_admission",
            "offer_price",
            "restrictions",
            "available_quantity",
        )
    )
    assert SELECT.fetchall([event.pk]) == orm
    assert SELECT.fetchone([event.pk]) == orm[0]


def test_select_of_no_row_is_none(event):
    assert SELECT.fetchone([event.pk + 1000]) is None
    assert SELECT.fetchall([event.pk + 1000]) == []


@pytest.mark.parametrize("row_name", ["A", None], ids=["named row", "best row"])
def test_the_quote_reads_its_row_in_one_query_with_the_orms_values(event, row_name):
    with CaptureQueriesContext(connection) as queries:
        quoted = row_quoted(
            event_id=event.event_id, section_name="Floor", row_name=row_name, quantity=1, found=None
        )
    assert len(queries) == 1
    stored = Row.objects.select_related("section__event").get(section__event=event, name="A")
    assert quoted == CatalogRow.of(event=stored.section.event, section=stored.section, row=stored)
    assert quoted.starts_at == stored.section.event.starts_at
    assert (quoted.offer_price, quoted.face_value, quoted.restrictions) == (
        Decimal("142.25"),
        Decimal("150.00"),
        ["Obstructed view"],
    )
    assert quoted.general_admission is True


# --- the writes: insert (with a primary key the caller chose) and update_many -------------------------------
def test_insert_with_the_callers_primary_key_writes_what_the_orm_reads(event):
    from django.utils import timezone

    from quotes.codec import new_quote_pk, quote_instant
    from quotes.models import Quote
    from tests.quotes.factories import QuoteFactory

    row = Row.objects.filter(section__event=event).order_by("name").first()
    made = quote_instant(timezone.now())
    quote = QuoteFactory.build(
        pk=new_quote_pk(), row=row, created_at=made, expires_at=made + timedelta(seconds=900)
    )
    quote.partner.save()
    quote.partner_id = quote.partner.pk
    chosen = quote.pk
    with CaptureQueriesContext(connection) as queries:
        rawsql.insert(quote, with_pk=True)
    assert len(queries) == 1 and quote.pk == chosen and not quote._state.adding
    stored = Quote.objects.get(pk=chosen)
    assert (stored.offer_price, stored.restrictions, stored.user_metadata, stored.created_at) == (
        row.offer_price,
        row.restrictions,
        quote.user_metadata,
        made,
    )
    assert Quote.objects.order_by().values_list("pk", flat=True).get() == chosen  # not a sequence's


def test_update_many_writes_each_rows_own_values_in_one_statement(event):
    rows = list(Row.objects.filter(section__event=event).order_by("name"))
    rows[0].offer_price, rows[0].restrictions = Decimal("10.05"), ["Aisle"]
    rows[1].offer_price, rows[1].restrictions = Decimal("20.10"), []
    with CaptureQueriesContext(connection) as queries:
        assert rawsql.update_many(rows, ["offer_price", "restrictions"]) == 2
    assert len(queries) == 1
    assert list(
        Row.objects.filter(section__event=event).order_by("name").values_list("offer_price", "restrictions")
    ) == [(Decimal("10.05"), ["Aisle"]), (Decimal("20.10"), [])]
    assert rawsql.update_many([], ["offer_price"]) == 0
