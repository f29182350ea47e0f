"""Concurrent order creation on PostgreSQL with real threads: one quote, one order; a row is never oversold."""

import pytest
from rest_framework.test import APIClient

from catalog.models import Row
from orders.models import Order
from quotes.models import Quote
from tests.concurrency import all_at_once
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quotes_written

from .conftest import order_form

pytestmark = pytest.mark.django_db(transaction=True)


def _race(forms: list[dict], token: str) -> list:
    """POST every form at the same moment, one thread each; return the responses in form order."""

    def post(form: dict):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return client.post("/v1/orders", form, format="multipart")

    responses = all_at_once([lambda form=form: post(form) for form in forms])
    assert all(r is not None for r in responses)
    return responses


def test_sixteen_concurrent_requests_with_one_quote_give_exactly_one_order(auth_client, partner):
    row = order_row(available_quantity=10)
    quote = QuoteFactory(partner=partner, row=row, quantity=3)
    form = order_form(quote)

    responses = _race([dict(form) for _ in range(16)], auth_client.token)

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] + [422] * 15, [r.content[:200] for r in responses]
    codes = {r.json()["error"]["code"] for r in responses if r.status_code == 422}
    assert codes == {"QUOTE_ALREADY_CONSUMED"}
    assert Order.objects.filter(quote=quote).count() == 1
    row.refresh_from_db()
    assert row.available_quantity == 7  # decremented once
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is not None


def test_many_quotes_on_a_small_row_never_oversell(auth_client, partner):
    row = order_row(available_quantity=5)
    # Quotes reserve nothing: twelve quotes of 2 were all valid when made, only two orders fit.
    quotes = [QuoteFactory(partner=partner, row=row, quantity=2) for _ in range(12)]

    responses = _race([order_form(q) for q in quotes], auth_client.token)

    created = [r for r in responses if r.status_code == 201]
    refused = [r for r in responses if r.status_code != 201]
    assert len(created) == 2
    assert {r.status_code for r in refused} == {422}
    assert {r.json()["error"]["code"] for r in refused} == {"INSUFFICIENT_QUANTITY"}
    row.refresh_from_db()
    assert row.available_quantity == 1
    assert sum(Order.objects.filter(row=row).values_list("quantity", flat=True)) == 4
    # The losers' quotes were not consumed: they roll back with the refused decrement.
    quotes_written()
    assert Quote.objects.filter(row=row, consumed_at__isnull=False).count() == 2
    assert Row.objects.filter(pk=row.pk, available_quantity__gte=0).exists()
