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


def test_every_field_the_e_mails_read_is_in_their_context():
    """The context holds the order, its event and its venue as dictionaries: a field a template reads that is
    not in them would be shown as nothing, so each one the templates name is there."""
    import re
    from pathlib import Path

    from django.conf import settings

    (order,) = make_orders(1)
    context = seller_mail._context(order)
    emails = Path(settings.BASE_DIR) / "templates" / "emails"
    named = {
        match
        for path in emails.iterdir()
        for match in re.findall(r"\b(order|event|venue)\.(\w+)", path.read_text())
    }
    assert ("order", "quantity") in named  # the search finds them
    assert sorted(f"{obj}.{name}" for obj, name in named if name not in context[obj]) == []


@pytest.mark.parametrize("quantity", [1, 2, 1234])
def test_a_quantity_is_shown_as_the_template_shows_a_number(quantity, settings):
    from django.template import Context, Template

    settings.USE_THOUSAND_SEPARATOR = quantity == 1234
    seller_mail._number.cache_clear()
    try:
        shown = seller_mail.number_shown(quantity)
        shown_template = Template("{{ shown }} ticket{{ n|pluralize }}")
        assert shown_template.render(Context({"shown": shown, "n": quantity})) == Template(
            "{{ n }} ticket{{ n|pluralize }}"
        ).render(Context({"n": quantity}))
        if quantity == 1234:
            assert shown == "1,234"
    finally:
        seller_mail._number.cache_clear()
