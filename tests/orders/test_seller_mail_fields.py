"""A confirmation batch loads its orders with the fields the seller's e-mail reads (``seller_mail.CONFIRMATION_*``):
the e-mail is the one a fully loaded order gives, and reading it costs no query of its own."""

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from orders import seller_mail
from orders.models import Order
from tests.orders.factories import make_orders

pytestmark = pytest.mark.django_db


def _sent(order: Order) -> tuple:
    mail.outbox.clear()
    to = seller_mail.seller_recipient(order)
    seller_mail.send_order_confirmation(order=order, to=to)
    (message,) = mail.outbox
    return to, message.subject, message.body, message.alternatives, message.extra_headers


@pytest.mark.parametrize("livemode", [True, False])
def test_the_fields_a_batch_loads_give_the_same_e_mail_and_no_query(livemode):
    (order,) = make_orders(1, livemode=livemode)
    Order.objects.filter(pk=order.pk).update(seller_name="Ana", in_hand_date=order.event.event_date)
    full = Order.objects.select_related(*seller_mail.CONFIRMATION_RELATED).get(pk=order.pk)
    narrow = (
        Order.objects.select_related(*seller_mail.CONFIRMATION_RELATED)
        .only(*seller_mail.CONFIRMATION_FIELDS)
        .get(pk=order.pk)
    )
    assert narrow.get_deferred_fields()  # the load is narrower than the whole row
    with CaptureQueriesContext(connection) as queries:
        narrowed = _sent(narrow)
    assert queries.captured_queries == []  # no deferred field read one by one
    assert narrowed == _sent(full)
