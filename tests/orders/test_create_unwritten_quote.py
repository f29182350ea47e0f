"""An order of a quote whose row is not written yet (kept in Redis first, or rebuilt from its id after Redis lost
it) writes the quote itself, in the one ``WITH`` of the order's write (orders/services/creation.py)."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from catalog.models import Row
from orders.models import Order
from quotes import quote_cache
from quotes.codec import encode_quote_id, new_quote_pk, quote_instant
from quotes.models import Quote
from tests.conftest import assert_error
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory

from .conftest import post_order

pytestmark = pytest.mark.django_db


def _unwritten(partner, row) -> Quote:
    made = quote_instant(timezone.now())
    return QuoteFactory.build(
        pk=new_quote_pk(),
        partner=partner,
        row=row,
        quantity=3,
        created_at=made,
        expires_at=made + timedelta(seconds=900),
    )


def _form(quote: Quote) -> dict:
    return {
        "quote_id": encode_quote_id(quote),
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": "true",
    }


@pytest.mark.parametrize("redis_kept_it", [True, False])
def test_an_order_writes_the_quote_it_uses(auth_client, partner, monkeypatch, redis_kept_it):
    row = order_row(available_quantity=10)
    quote = _unwritten(partner, row)
    copy = QuoteFactory.build(**{f.attname: getattr(quote, f.attname) for f in Quote._meta.concrete_fields})
    monkeypatch.setattr(
        quote_cache, "quote_copy", lambda pk: copy if redis_kept_it and pk == quote.pk else None
    )
    assert not Quote.objects.filter(pk=quote.pk).exists()

    response = post_order(auth_client, _form(quote))

    assert response.status_code == 201, response.content
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])
    written = Quote.objects.get(pk=quote.pk)
    assert order.quote_id == written.pk and written.consumed_at == order.created_at
    assert written.offer_price == Decimal("85.00") and written.quantity == 3
    assert written.expires_at == quote.expires_at
    # Redis's copy keeps the seller's contact; a quote rebuilt from its id has none.
    assert written.user_metadata == (quote.user_metadata if redis_kept_it else {})
    assert Row.objects.get(pk=row.pk).available_quantity == 7
    assert_error(post_order(auth_client, _form(quote)), 422, "QUOTE_ALREADY_CONSUMED")
    assert Order.objects.count() == 1 and Row.objects.get(pk=row.pk).available_quantity == 7


def test_an_order_of_a_quote_the_writer_wrote_meanwhile_consumes_that_row(auth_client, partner, monkeypatch):
    from quotes import selectors

    row = order_row(available_quantity=10)
    quote = _unwritten(partner, row)
    monkeypatch.setattr(quote_cache, "quote_copy", lambda pk: quote)
    real = selectors.quote_unwritten

    def writer_runs_meanwhile(claims, **kwargs):
        found = real(claims, **kwargs)
        # The batched writer copies the quote between the order's read and its write.
        Quote.objects.bulk_create(
            [
                QuoteFactory.build(
                    **{f.attname: getattr(found, f.attname) for f in Quote._meta.concrete_fields}
                )
            ]
        )
        return found

    monkeypatch.setattr(selectors, "quote_unwritten", writer_runs_meanwhile)
    response = post_order(auth_client, _form(quote))
    assert response.status_code == 201, response.content
    written = Quote.objects.get(pk=quote.pk)
    assert written.consumed_at == Order.objects.get().created_at
    assert_error(post_order(auth_client, _form(quote)), 422, "QUOTE_ALREADY_CONSUMED")


def test_too_few_tickets_left_writes_neither_the_order_nor_the_quote(auth_client, partner, monkeypatch):
    row = order_row(available_quantity=2)
    quote = _unwritten(partner, row)
    monkeypatch.setattr(quote_cache, "quote_copy", lambda pk: quote)
    assert_error(post_order(auth_client, _form(quote)), 422, "INSUFFICIENT_QUANTITY")
    assert not Quote.objects.filter(pk=quote.pk).exists() and not Order.objects.exists()
