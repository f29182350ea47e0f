"""What an order costs the database on PostgreSQL (docs/architecture/orders.md "Creating an order"): the quote and its
event read in one query, then the quote's single use, the row's decrement, the order, its history and its
notification written in one statement, outside any transaction the test holds (``transaction=True``: the
request commits as it does in production)."""

from datetime import timedelta

import pytest
from django.core.cache import cache, caches
from django.db import connection

from catalog.models import Row
from orders import dispatch
from orders.models import Notification, Order, OrderStatusHistory
from quotes.codec import decode_quote_id
from quotes.models import Quote
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory
from tests.testmode.conftest import client_for, make_partner_with_both_pairs

from .conftest import order_form, pdf_upload, post_order

pytestmark = pytest.mark.django_db(transaction=True)

# The bench's order (bench/README.md): a multipart mobile_transfer order, and the same with a PDF.
FORMS = {
    "mobile_transfer": {
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": "true",
        "in_hand_date": None,
    },
    "pdf": {"delivery_type": "pdf", "is_ready_to_deliver": "true", "in_hand_date": None},
}


@pytest.fixture
def published(monkeypatch) -> list:
    """The tasks handed to the broker after commit, kept here instead of run (the confirmation is a worker's
    work, not the request's)."""
    sent: list = []
    monkeypatch.setattr(dispatch, "publish", lambda *args, **kwargs: sent.append(args) or True)
    return sent


def _statements_of(request) -> list[str]:
    seen: list[str] = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        response = request()
    assert response.status_code == 201, response.content
    return seen


def test_an_order_of_a_quote_not_yet_written_costs_two_statements_too(auth_client, partner, published):
    row = order_row(available_quantity=10)
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
        "user_metadata": {"email": "seller@example.com"},
    }

    def quote_id() -> str:
        return auth_client.post("/v1/quotes", body, format="json").json()["data"]["quote_id"]

    post_order(
        auth_client,
        {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true", "quote_id": quote_id()},
    )
    quote = quote_id()
    assert not Quote.objects.filter(pk=decode_quote_id(quote)).exists()  # in Redis, on its way

    statements = _statements_of(
        lambda: post_order(
            auth_client,
            {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true", "quote_id": quote},
        )
    )

    # The read (the catalog's row, and the quote's if it were written) and one WITH that writes the quote too.
    assert len(statements) == 2, statements
    assert statements[1].lstrip().startswith("WITH") and "ON CONFLICT" in statements[1]
    written = Quote.objects.get(pk=decode_quote_id(quote))
    order = Order.objects.get(quote=written)
    assert written.consumed_at == order.created_at and written.user_metadata == {
        "email": "seller@example.com"
    }
    assert Row.objects.get(pk=row.pk).available_quantity == 6


@pytest.mark.parametrize("delivery_type", ["mobile_transfer", "pdf"])
def test_an_order_costs_two_statements_on_postgresql(auth_client, partner, published, delivery_type):
    row = order_row(available_quantity=10)
    warm, quote = (QuoteFactory(partner=partner, row=row, quantity=2) for _ in range(2))
    form = dict(FORMS[delivery_type])
    post_order(auth_client, order_form(warm, **form, file=pdf_upload() if delivery_type == "pdf" else None))

    statements = _statements_of(
        lambda: post_order(
            auth_client, order_form(quote, **form, file=pdf_upload() if delivery_type == "pdf" else None)
        )
    )

    assert len(statements) == 2, statements
    assert statements[0].lstrip().startswith("SELECT")
    assert statements[1].lstrip().startswith("WITH")
    order = Order.objects.get(quote=quote)
    assert order.delivery_type == delivery_type
    assert order.has_ticket_file is (delivery_type == "pdf")
    assert order.restrictions == ["Obstructed view"] and order.offer_price == row.offer_price
    assert order.transfer.state == "none" and order.confirmation_started_at is None
    assert Quote.objects.get(pk=quote.pk).consumed_at == order.created_at
    assert Row.objects.get(pk=row.pk).available_quantity == 6
    assert list(OrderStatusHistory.objects.filter(order=order).values_list("to_status", flat=True)) == [
        "accepted"
    ]
    notification = Notification.objects.get(order=order)
    assert notification.type == "order.created" and notification.created_at == order.created_at
    assert notification.dispatched_at is None and notification.livemode is True
    assert notification.payload["data"]["order"]["order_id"] == order.order_id
    assert notification.payload["data"]["order"]["status_history"][0]["to_status"] == "accepted"
    # Handed over after commit, by its primary key: waiting in Redis for the batched delivery the first order
    # published (still on its way), and noted as on its way.
    assert published == [("orders.tasks.notifications_deliver_many",)]
    backend = caches["default"]
    key = backend.make_and_validate_key(dispatch.PENDING_KEY)
    assert str(notification.pk).encode() in backend._cache.get_client(key).lrange(key, 0, -1)
    assert cache.get(dispatch._on_the_way_key(notification.pk)) == 1


def test_the_next_catalog_read_after_a_committed_order_shows_it(auth_client, partner, published):
    row = order_row(available_quantity=10)
    quote = QuoteFactory(partner=partner, row=row, quantity=3)
    section = row.section
    path = f"/v1/events/{section.event.event_id}/sections/{section.name}/rows"

    def available() -> int:
        response = auth_client.get(path)
        assert response.status_code == 200, response.content
        return {r["row_name"]: r["available_quantity"] for r in response.json()["data"]["results"]}[row.name]

    assert available() == 10  # now held by the response store
    response = post_order(auth_client, order_form(quote, **FORMS["mobile_transfer"]))
    assert response.status_code == 201, response.content
    assert available() == 7


def test_a_refused_order_leaves_nothing_written(auth_client, partner, published):
    row = order_row(available_quantity=1)
    quote = QuoteFactory(partner=partner, row=row, quantity=2)

    response = post_order(auth_client, order_form(quote, **FORMS["mobile_transfer"]))

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "INSUFFICIENT_QUANTITY"
    assert response.json()["error"]["details"] == {"requested": 2, "available": 1}
    assert Quote.objects.get(pk=quote.pk).consumed_at is None  # the statement rolled back as a whole
    assert Row.objects.get(pk=row.pk).available_quantity == 1
    assert not Order.objects.exists() and not Notification.objects.exists()
    assert published == []


def test_a_test_mode_order_checks_the_row_without_taking_from_it(published):
    pairs = make_partner_with_both_pairs()
    partner, client = pairs.partner, client_for(pairs.test)
    row = order_row(available_quantity=5)
    quote = QuoteFactory(partner=partner, row=row, quantity=2, livemode=False)
    too_many = QuoteFactory(partner=partner, row=row, quantity=6, livemode=False)

    created = post_order(client, order_form(quote, **FORMS["mobile_transfer"]))
    refused = post_order(client, order_form(too_many, **FORMS["mobile_transfer"]))

    assert created.status_code == 201, created.content
    assert created.json()["data"]["livemode"] is False
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "INSUFFICIENT_QUANTITY"
    assert Row.objects.get(pk=row.pk).available_quantity == 5
    assert Quote.objects.get(pk=too_many.pk).consumed_at is None


def test_an_expired_quote_is_refused_before_anything_is_written(auth_client, partner, published):
    quote = QuoteFactory(partner=partner, row=order_row(available_quantity=5), quantity=1)
    Quote.objects.filter(pk=quote.pk).update(expires_at=quote.created_at + timedelta(microseconds=1))

    statements = []
    with connection.execute_wrapper(
        lambda execute, sql, *rest: statements.append(sql) or execute(sql, *rest)
    ):
        response = post_order(auth_client, order_form(quote, **FORMS["mobile_transfer"]))

    assert response.status_code == 422 and response.json()["error"]["code"] == "QUOTE_EXPIRED"
    assert all(sql.lstrip().startswith("SELECT") for sql in statements), statements  # read, never written
    assert not Order.objects.exists() and Quote.objects.get(pk=quote.pk).consumed_at is None
