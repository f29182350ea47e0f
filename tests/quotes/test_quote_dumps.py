"""A quote is made by position and kept in Redis by per-field dumpers (quotes.services._quote_by_position,
quotes.quote_cache.quote_dumps): both give what Django's own, slower, paths give, for every column. The batched
writer hands those entries to PostgreSQL as they are (quotes.quote_cache.pending_insert_sql): the row it writes
holds every column of the quote."""

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db.models.signals import post_init

from catalog.models import Row
from quotes import quote_cache, services
from quotes.models import Quote
from tests.conftest import make_partner

MADE = datetime.now(UTC).replace(microsecond=123000)
VALUES = {
    "id": 2**62 + 12345,
    "partner_id": 7,
    "livemode": False,
    "event_id": 11,
    "section_id": 12,
    "row_id": 13,
    "quantity": 3,
    "offer_price": Decimal("120.50"),
    "total_price": Decimal("361.50"),
    "face_value": Decimal("165.00"),
    "event_name": "Harbor Lights Tour",
    "section_name": "Lower 101",
    "section_name_display": "Lower Level 101",
    "row_name": "B",
    "row_name_display": "Row B",
    "general_admission": True,
    "restrictions": ["Obstructed view"],
    "restriction_detail": "Pillar at seats 1-4.",
    "primary_site": "ticketmaster",
    "user_metadata": {"first_name": "Ada", "email": "ada@seller.example"},
    "created_at": MADE,
    "expires_at": MADE + timedelta(minutes=15),
    "consumed_at": None,
}


def django_dumps(quote: Quote) -> str:
    """Each column as Django's field gives it: the format Redis holds."""
    values = []
    for field in Quote._meta.concrete_fields:
        value = field.value_from_object(quote)
        if value is None or field.get_internal_type() == "JSONField":
            values.append(value)
        else:
            values.append(field.value_to_string(quote))
    return json.dumps(values, separators=(",", ":"))


def test_every_column_is_named():
    assert set(VALUES) == {field.attname for field in Quote._meta.concrete_fields}


def test_a_quote_made_by_position_is_the_quote_made_by_name():
    by_position = services._quote_by_position(VALUES)
    by_name = Quote(**VALUES)
    for field in Quote._meta.concrete_fields:
        assert getattr(by_position, field.attname) == getattr(by_name, field.attname), field.attname
    assert by_position._state.adding and by_position._state.db is None and by_position.pk == VALUES["id"]
    assert by_position.__dict__.keys() == by_name.__dict__.keys()
    # The related objects load as on any new instance, from the keys set.
    assert by_position.partner_id == 7 and not Quote._meta.get_field("partner").is_cached(by_position)
    with pytest.raises(KeyError):
        services._quote_by_position({k: v for k, v in VALUES.items() if k != "consumed_at"})


def test_a_quote_is_made_by_the_model_while_its_signals_have_receivers():
    seen = []

    def received(sender, **kwargs):
        seen.append(sender)

    post_init.connect(received, sender=Quote)
    try:
        quote = services._quote_by_position(VALUES)
    finally:
        post_init.disconnect(received, sender=Quote)
    assert seen == [Quote] and quote.row_id == VALUES["row_id"]
    services._quote_by_position(VALUES)
    assert seen == [Quote]


VARIANTS = [
    {},
    {"restriction_detail": None, "restrictions": [], "user_metadata": {}},
    {
        "consumed_at": MADE + timedelta(minutes=5, microseconds=7),
        "livemode": True,
    },
    {"offer_price": Decimal("0.10"), "total_price": Decimal("5.00"), "general_admission": False},
    {
        "user_metadata": {"note": "Ünïcode \u2028", "nested": {"list": [1.5, True, None]}},
        "event_name": 'Ünïcode "quoted" \\ back\\slash\n\u2028 and a tab\t',
        "restrictions": [{"nested": [1, None, "x"]}, "Obstructed view"],
        "restriction_detail": "",
    },
    # An integer beyond 64 bits in the seller's data: written by Python's json, read back exactly.
    {"user_metadata": {"customer_number": 10**30, "ids": [2**64, -(2**63) - 1]}},
]


@pytest.mark.parametrize("changes", VARIANTS)
def test_the_dumped_quote_is_what_djangos_fields_write_and_reads_back(changes):
    quote = Quote(**{**VALUES, **changes})
    raw, expected = quote_cache.quote_dumps(quote), django_dumps(quote)
    assert json.loads(raw) == json.loads(expected)
    if (
        expected.isascii() and "\\u" not in expected
    ):  # beyond ASCII, Python's json writes escapes; the text says the same
        assert raw == expected
    back = quote_cache.quote_loads(raw)
    for field in Quote._meta.concrete_fields:
        assert getattr(back, field.attname) == getattr(quote, field.attname), field.attname


@pytest.mark.django_db
def test_the_writer_writes_every_column_as_the_quote_holds_it(event):
    partner = make_partner(name="Writer", email="writer@example.com").partner
    row = Row.objects.select_related("section").get(section__event=event, name="B")
    placed = {"partner_id": partner.pk, "event_id": event.pk, "section_id": row.section_id, "row_id": row.pk}
    quotes = [
        Quote(**{**VALUES, **placed, **changes, "id": VALUES["id"] + number})
        for number, changes in enumerate(VARIANTS)
    ]
    gone = Quote(**{**VALUES, **placed, "id": VALUES["id"] + 100, "row_id": row.pk + 10_000})
    for quote in [*quotes, gone]:
        quote_cache.quote_pending_add(quote)

    assert services.quotes_flush() == len(quotes) + 1
    assert not Quote.objects.filter(pk=gone.pk).exists()  # its row is gone: dropped, as the writer always did
    for quote in quotes:
        written = Quote.objects.get(pk=quote.pk)
        for field in Quote._meta.concrete_fields:
            assert getattr(written, field.attname) == getattr(quote, field.attname), (quote.pk, field.attname)
