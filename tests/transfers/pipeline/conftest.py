"""Fixtures of the pipeline tests: orders of the sandbox platform's event, signed sandbox mail, delivery through
the one intake entry point, and the service's own authentication."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from catalog.services import local_event_date
from orders.services import order_create, order_transition
from orders.transfers.intake import services as intake
from orders.transfers.pipeline import process
from orders.transfers.testing.simulator import sandbox_sign
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory, VenueFactory
from tests.orders.factories import PATH
from tests.quotes.factories import QuoteFactory, quote_token

from . import mail


def transfer_order(
    partner, *, status="awaiting_transfer", quantity=2, livemode=False, general_admission=False
):
    """An order of ``partner`` for Skyline Festival at Harbor Arena, section "Lower 101", row "A"."""
    zone = ZoneInfo("America/New_York")
    now = datetime.now(zone)
    starts = datetime(now.year + 1, 3, 14, 20, 0, tzinfo=zone)
    venue = VenueFactory(name="Harbor Arena", timezone="America/New_York")
    event = EventFactory(
        name="Skyline Festival",
        venue=venue,
        starts_at=starts,
        event_date=local_event_date(starts_at=starts, tz_name="America/New_York"),
    )
    section = SectionFactory(
        event=event, name="Lower 101", name_display="Section Lower 101", general_admission=general_admission
    )
    row = RowFactory(section=section, name="A", name_display="Row A", available_quantity=50)
    quote = QuoteFactory(partner=partner, row=row, quantity=quantity, livemode=livemode)
    order = order_create(
        partner_pk=partner.pk,
        actor="partner:test",
        quote_id=quote_token(quote),
        delivery_type="mobile_transfer",
        is_ready_to_deliver=False,
        in_hand_date=event.event_date - timedelta(days=7),
        livemode=livemode,
    )
    order.refresh_from_db()
    steps = PATH[status]
    if order.status in steps:
        steps = steps[steps.index(order.status) + 1 :]
    for step in steps:
        order = order_transition(order=order, to=step, actor="staff:test", reason="test setup")
    return order


class Kit:
    """Signs mail with the sandbox platform's key and delivers it to the intake; the service's own
    authentication decides it."""

    def sign(self, raw: bytes) -> bytes:
        return sandbox_sign(raw)

    def offer(self, order, **fields) -> bytes:
        return self.sign(mail.compose(order, "transfer_offer", **fields))

    def notice(self, order, kind, **fields) -> bytes:
        return self.sign(mail.compose(order, kind, **fields))

    def deliver(self, raw: bytes, order):
        [received] = intake.message_receive(
            raw, recipients=[order.transfer_address], channel="smtp", peer="127.0.0.1"
        )
        return received.message

    def process(self, raw: bytes, order):
        message = self.deliver(raw, order)
        process.message_process(message_pk=message.pk)
        message.refresh_from_db()
        return message


@pytest.fixture
def kit():
    return Kit()
