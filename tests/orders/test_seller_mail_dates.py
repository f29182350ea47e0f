"""The seller's e-mails show the event's start and the date to deliver by as Django's ``date`` filter writes them,
each formatted once per value, form and language (orders.seller_mail.dates_shown)."""

from datetime import datetime, time, timedelta

import pytest
from django.core import mail
from django.template import Context, Template
from django.utils import timezone, translation

from orders import seller_mail
from orders.models import Order
from orders.transfers.staff.mail import send_transfer_question
from tests.conftest import make_partner
from tests.orders.factories import make_order

pytestmark = pytest.mark.django_db


def _as_the_filter_writes(value, form: str) -> str:
    return Template("{{ value|date:form }}").render(Context({"value": value, "form": form}))


def _days_ahead(days: int):
    return timezone.localdate() + timedelta(days=days)


@pytest.mark.parametrize("clock", [time(0, 0), time(9, 5), time(12, 30), time(23, 59)])
def test_a_date_is_shown_as_the_date_filter_shows_it_in_the_active_language(clock):
    for days in (1, 45, 200):
        day = _days_ahead(days)
        start = datetime.combine(day, clock)
        for language in ("en-us", "fr", "en-us", "de"):  # the cache keeps each language's own words
            with translation.override(language):
                for value, form in (
                    (start, seller_mail.LONG_DATE),
                    (start, seller_mail.TIME_OF_DAY),
                    (day, seller_mail.LONG_DATE),
                ):
                    assert seller_mail.dates_shown(value, form) == _as_the_filter_writes(value, form)
    assert seller_mail.dates_shown(None, seller_mail.LONG_DATE) == ""
    with translation.override("fr"):
        assert seller_mail.dates_shown(start, seller_mail.LONG_DATE) != _as_the_filter_writes(
            start, "l"
        ) and (
            seller_mail.dates_shown(start, seller_mail.LONG_DATE).startswith(
                _as_the_filter_writes(start, "l")
            )
        )


def test_every_seller_email_shows_the_start_and_the_date_to_deliver_by():
    order = make_order(make_partner().partner, status="awaiting_transfer")
    Order.objects.filter(pk=order.pk).update(in_hand_date=_days_ahead(9))
    order = Order.objects.select_related("partner", "event__venue", "quote").get(pk=order.pk)
    start = order.event.local_starts_at
    shown = {
        "start": _as_the_filter_writes(start, "l, F j, Y"),
        "time": _as_the_filter_writes(start, "g:i A"),
        "deliver_by": _as_the_filter_writes(order.in_hand_date, "l, F j, Y"),
    }
    mail.outbox.clear()
    seller_mail.send_order_confirmation(order=order, to="seller@example.com")
    seller_mail.send_transfer_reminder(order=order, to="seller@example.com", why="recalled")
    seller_mail.send_transfer_partial(order=order, to="seller@example.com", detected=1, seats=["A1"])
    seller_mail.send_order_canceled(order=order, to="seller@example.com")
    send_transfer_question(order=order, question="Which seats did you send?")
    confirmation, reminder, partial, canceled, question = mail.outbox
    for message in (confirmation, reminder):
        for text in (message.body, message.alternatives[0][0]):
            assert f"{shown['start']} at {shown['time']}" in text
    for message in (confirmation, reminder, partial):
        for text in (message.body, message.alternatives[0][0]):
            assert shown["deliver_by"] in text
    for message in (partial, canceled, question):
        for text in (message.body, message.alternatives[0][0]):
            assert f"({shown['start']}, {order.event.venue.name})" in text
