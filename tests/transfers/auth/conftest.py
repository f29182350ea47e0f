"""Orders to authenticate mail for: a live one and a test-mode one (primary_site ``ticketmaster``)."""

import pytest

from tests.orders.conftest import create_order
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quote_token


@pytest.fixture
def live_order(partner):
    return create_order(partner)


@pytest.fixture
def other_live_order(partner):
    return create_order(partner)


@pytest.fixture
def test_order(partner):
    row = order_row(available_quantity=50)
    quote = QuoteFactory(partner=partner, row=row, quantity=2, livemode=False)
    order = create_order(partner, row=row, quote_id=quote_token(quote), livemode=False)
    assert order.livemode is False
    return order


@pytest.fixture
def other_test_order(partner):
    row = order_row(available_quantity=50)
    quote = QuoteFactory(partner=partner, row=row, quantity=2, livemode=False)
    return create_order(partner, row=row, quote_id=quote_token(quote), livemode=False)
