"""End to end, as a partner's order lives it: a partner with both pairs of credentials, orders made and
confirmed through the API, the transfer e-mail handed to the one intake entry point
(``orders.transfers.intake.services.message_receive``) and processed after its commit, DKIM signed for real.

A platform of the tests' own, ``ticketsexample`` (``mail.tickets-example.com``), is registered through the
``TRANSFER_PLATFORM_DIRS`` setting, its signing key made here and published by a ``StaticResolver``: every
test runs under that resolver, so no lookup ever leaves the process (the sandbox key is answered by the
service's own layer).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from orders.models import Notification, Order
from orders.transfers.authenticity.dns import use_resolver
from orders.transfers.intake import services as intake
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.testing.simulator import sandbox_sign
from tests.catalog.factories import RowFactory
from tests.testmode.conftest import api_order, client_for, make_partner_with_both_pairs
from tests.transfers.mailkit import DkimKey, make_key, resolver_for, transfer_email

PLATFORM = "ticketsexample"
PLATFORM_DOMAIN = "mail.tickets-example.com"
PLATFORM_FROM = f"Tickets Example <transfers@{PLATFORM_DOMAIN}>"
PLATFORM_YAML = f"""\
platform: {PLATFORM}
sender_domains: [{PLATFORM_DOMAIN}]
accept_link_hosts: [accept.{PLATFORM_DOMAIN}]
static_barcodes: false
kinds:
  transfer_offer:
    subject: "^You've been sent \\\\d+ tickets? to .+$"
    required: [event, venue, start, quantity, accept_link]
    fields:
      event: "^Event:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
      venue: "^Venue:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
      start: "^Date:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
      section: "^Section:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
      row: "^Row:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
      seats: "^Seats?:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
      quantity: "^Tickets:[ \\\\t]*(?P<value>\\\\d+)[ \\\\t]*$"
      accept_link: "(?P<value>https://[^\\\\s<>]+)"
  transfer_accepted:
    subject: "^Your tickets to .+ were accepted$"
    required: [event]
    fields:
      event: "^Event:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
  transfer_canceled:
    subject: "^Ticket transfer canceled: .+$"
    required: [event]
    fields:
      event: "^Event:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"
"""

S, TS = Order.Status, Order.TransferState
NT = Notification.Type


@pytest.fixture
def platform_key() -> DkimKey:
    """The test platform's signing key (d=tickets-example.com, the From's organisational domain)."""
    return make_key("tickets-example.com", "s1")


@pytest.fixture
def platform(settings, tmp_path, platform_key):
    """The ``ticketsexample`` template in a folder of ``TRANSFER_PLATFORM_DIRS`` (as staff add a platform)."""
    folder = tmp_path / "platforms"
    folder.mkdir()
    (folder / f"{PLATFORM}.yaml").write_text(PLATFORM_YAML, encoding="utf-8")
    settings.TRANSFER_PLATFORM_DIRS = (str(folder),)
    return PLATFORM


@pytest.fixture
def dns(platform_key):
    """Every lookup answered here: the test platform's key, nothing else (the sandbox key by the service)."""
    resolver = resolver_for(platform_key)
    with use_resolver(resolver):
        yield resolver


@dataclass
class Shop:
    """A partner with both pairs of credentials and an API client per mode."""

    partner: object
    test: object
    live: object
    capture: object

    def order(
        self, *, live: bool = False, quantity: int = 2, primary_site: str = "ticketmaster", **form
    ) -> Order:
        """An order made through the API and confirmed (``awaiting_transfer``)."""
        row = RowFactory(
            name="A",
            name_display="Row A",
            available_quantity=50,
            section__name="Lower 101",
            section__name_display="Section Lower 101",
            section__event__primary_site=primary_site,
        )
        with self.capture(execute=True):
            data = api_order(self.live if live else self.test, row, quantity=quantity, **form)
        order = Order.objects.select_related("event__venue", "partner").get(order_id=data["order_id"])
        assert order.status == S.AWAITING_TRANSFER and order.livemode is live
        return order


@pytest.fixture
def shop(db, django_capture_on_commit_callbacks, settings, platform, dns) -> Shop:
    settings.PAYMENT_PLATFORM = "sandbox"
    pairs = make_partner_with_both_pairs()
    return Shop(
        pairs.partner, client_for(pairs.test), client_for(pairs.live), django_capture_on_commit_callbacks
    )


def mail_for(order: Order, *, kind: str = "transfer_offer", seats=None, **fields) -> bytes:
    """The platform's e-mail of ``kind`` to ``order`` (unsigned), its event, venue, section, row and seats
    the order's (seats ``1..quantity``)."""
    values = {
        "event": order.event.name,
        "venue": order.event.venue.name,
        "starts": order.event.venue_starts_at.strftime("%Y-%m-%d %H:%M"),
        "section": order.section_name,
        "row": order.row_name,
        "seats": seats if seats is not None else [str(n) for n in range(1, order.quantity + 1)],
    }
    values.update(fields)
    return transfer_email(order.transfer_address, kind=kind, **values)


def genuine(order: Order, **fields) -> bytes:
    """The sandbox platform's genuine e-mail to ``order`` (signed with the service's sandbox key)."""
    return sandbox_sign(mail_for(order, **fields))


def deliver(raw: bytes, order: Order, capture, *, recipients=None) -> InboundMessage:
    """Hand ``raw`` to the intake as the SMTP receiver does; processing runs after the commit, in-process."""
    with capture(execute=True):
        received = intake.message_receive(
            raw, recipients=recipients or [order.transfer_address], channel="smtp", peer="127.0.0.1"
        )
    [message] = [r.message for r in received if r.message.order_id == order.pk]
    message.refresh_from_db()
    return message


def snapshot(order: Order) -> dict:
    """What a forgery must never change: the order's status and transfer fields, its history and notices."""
    order.refresh_from_db()
    return {
        "status": order.status,
        "transfer_state": order.transfer.state,
        "transfer_quantity_detected": order.transfer.quantity_detected,
        "transfer_source": order.transfer.source,
        "transfer_detected_at": order.transfer.detected_at,
        "status_history": order.status_history.count(),
        "notifications": sorted(
            Notification.objects.filter(
                order=order, type__in=(NT.ORDER_STATUS_CHANGED, NT.ORDER_TRANSFER_UPDATED)
            ).values_list("pk", flat=True)
        ),
    }


def open_cases(order: Order) -> list[str]:
    return list(
        TransferCase.objects.filter(order=order, state__in=TransferCase.OPEN_STATES).values_list(
            "kind", flat=True
        )
    )
