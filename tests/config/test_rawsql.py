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


CANDIDATES = (
    None,
    "",
    "text",
    "12",
    0,
    12,
    True,
    False,
    Decimal("1.50"),
    datetime.now(UTC) - timedelta(days=3),
    (datetime.now(UTC) - timedelta(days=3)).replace(tzinfo=None),  # naive: the field warns and makes it aware
)


def _prepared_by_the_fields(obj) -> list:
    fields = rawsql.columns(type(obj)).fields
    return [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_values_are_what_every_field_prepares_for_every_kind_of_value():
    """``rawsql.values`` takes some values as they are: for every model and every insert column, each kind of
    value gives what the field's own ``pre_save`` and ``get_db_prep_save`` give, of the same type (or fails as
    they fail)."""
    from django.apps import apps

    checked = taken_as_they_are = 0
    for model in apps.get_models():
        if model._meta.proxy or not model._meta.managed:
            continue
        fields = rawsql.columns(model).fields
        kinds, _wraps, _json = rawsql._field_kinds(model, "default")
        for i, field in enumerate(fields):
            if (
                field.get_internal_type() == "JSONField"
                or getattr(field, "auto_now", False)
                or getattr(field, "auto_now_add", False)
            ):
                continue  # a JSON value is written as it is; an auto_now(_add) field's pre_save sets the time
            for value in CANDIDATES:
                obj = model()
                setattr(obj, field.attname, value)
                try:
                    expected = _prepared_by_the_fields(obj)[i]
                except Exception as exc:  # noqa: BLE001 - the same failure, whatever it is
                    with pytest.raises(type(exc)):
                        rawsql.values(obj)
                    continue
                got = rawsql.values(obj)[i]
                assert (got, type(got)) == (expected, type(expected)), (model, field.name, value)
                checked += 1
                taken_as_they_are += kinds[i] is not None and type(value) is kinds[i]
    assert checked > 1000 and taken_as_they_are > 300, (checked, taken_as_they_are)


def _notifications(order, *, tag: str, count: int = 5, at: datetime | None = None) -> list:
    from orders.models import Notification

    at = at or datetime.now(UTC) - timedelta(minutes=5)
    return [
        Notification(
            partner_id=order.partner_id,
            livemode=order.livemode,
            type=Notification.Type.ORDER_STATUS_CHANGED,
            order_id=order.pk,
            created_at=at + timedelta(seconds=n),
            payload={
                "n": n,
                "tag": tag,
                "text": 'quote " backslash \\ line\nend',
                "nested": {"a": [1, None, 2.5]},
            },
        )
        for n in range(count)
    ]


def _stored(rows) -> list[dict]:
    from orders.models import Notification

    found = Notification.objects.in_bulk([row.pk for row in rows])
    return [
        {
            f.attname: getattr(found[row.pk], f.attname)
            for f in Notification._meta.concrete_fields
            if f.attname not in ("id", "notification_id")
        }
        for row in rows
    ]


@pytest.mark.django_db(transaction=True)
def test_insert_many_writes_what_bulk_create_writes_each_row_keyed_in_its_order():
    from orders.models import Notification
    from tests.conftest import make_partner
    from tests.orders.factories import make_order

    order = make_order(make_partner().partner)
    at = datetime.now(UTC) - timedelta(minutes=5)
    ours = rawsql.insert_many(_notifications(order, tag="same", at=at))
    theirs = Notification.objects.bulk_create(_notifications(order, tag="same", at=at))
    assert all(row.pk is not None and not row._state.adding for row in ours)
    assert [row.pk for row in ours] == sorted(row.pk for row in ours)
    # Each instance got the key of its own row: its payload says which it is.
    assert [Notification.objects.get(pk=row.pk).payload["n"] for row in ours] == [0, 1, 2, 3, 4]
    assert _stored(ours) == _stored(theirs)
    assert [row.notification_id for row in ours] == [
        Notification.objects.get(pk=row.pk).notification_id for row in ours
    ]


@pytest.mark.django_db(transaction=True)
def test_insert_many_skips_a_conflicting_row_when_told_and_fails_the_batch_otherwise():
    from django.db import IntegrityError

    from orders.models import Notification
    from tests.conftest import make_partner
    from tests.orders.factories import make_order

    order = make_order(make_partner().partner)
    (first,) = rawsql.insert_many(_notifications(order, tag="first", count=1))
    again = _notifications(order, tag="again", count=2)
    again[0].notification_id = first.notification_id
    before = Notification.objects.count()
    rawsql.insert_many(again, ignore_conflicts=True)
    assert Notification.objects.count() == before + 1
    assert Notification.objects.get(notification_id=first.notification_id).payload["tag"] == "first"
    clash = _notifications(order, tag="clash", count=2)
    clash[1].notification_id = first.notification_id
    with pytest.raises(IntegrityError):
        rawsql.insert_many(clash)
    assert Notification.objects.count() == before + 1


@pytest.mark.django_db
def test_insert_many_of_a_value_that_is_an_expression_goes_through_bulk_create():
    from django.db.models.functions import Now

    from orders.models import Notification
    from tests.conftest import make_partner
    from tests.orders.factories import make_order

    order = make_order(make_partner().partner)
    rows = _notifications(order, tag="now", count=2)
    rows[1].created_at = Now()
    written = rawsql.insert_many(rows)
    assert [row.pk is not None for row in written] == [True, True]
    assert Notification.objects.filter(pk__in=[row.pk for row in written]).count() == 2
