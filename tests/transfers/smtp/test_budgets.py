"""The time budgets of a message sent to the real receiver (docs/operations/receiving-mail.md "Receiving mail"): one 5 s budget
for the whole SPF evaluation however many lookups its record makes, and 10 s of wall time for decoding a
ticket file, after which the child process reading it is killed and a case opens."""

from __future__ import annotations

import time
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import pytest
from django.utils import timezone

from bench.transfers_hostile import pdf_bomb
from orders.transfers.authenticity.dns import StaticResolver, use_resolver
from orders.transfers.models import InboundMessage, TicketFileCheck, TransferCase
from orders.transfers.testing.simulator import sandbox_sign
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quote_token

from .conftest import smtp_send

pytestmark = pytest.mark.django_db(transaction=True)


def qr_order(partner):
    """A test-mode ``mobile_qr`` order awaiting its transfer (its confirmation ran in-process)."""
    from datetime import timedelta

    from orders.models import Order
    from orders.services import order_create, order_transition

    quote = QuoteFactory(partner=partner, row=order_row(available_quantity=50), quantity=2, livemode=False)
    order = order_create(
        partner_pk=partner.pk,
        actor=f"partner:{partner.public_id}",
        quote_id=quote_token(quote),
        delivery_type="mobile_qr",
        is_ready_to_deliver=False,
        in_hand_date=quote.event.event_date - timedelta(days=7),
        livemode=False,
    )
    order.refresh_from_db()
    if order.status != Order.Status.AWAITING_TRANSFER:
        order = order_transition(
            order=order, to=Order.Status.AWAITING_TRANSFER, actor="staff:test", reason="setup"
        )
    return order


class SlowDns(StaticResolver):
    """DNS answering every lookup after ``delay`` seconds (a slow or hostile nameserver)."""

    def __init__(self, *args, delay: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.delay = delay

    def txt(self, name):
        time.sleep(self.delay)
        return super().txt(name)

    def lookup(self, name, rdtype):
        time.sleep(self.delay)
        return super().lookup(name, rdtype)


def spf_flood_dns(delay: float) -> SlowDns:
    """``spf.example``: ten ``mx:`` mechanisms of ten hosts each, 111 lookups in all."""
    record = "v=spf1 " + " ".join(f"mx:h{n}.example" for n in range(10)) + " -all"
    other = {}
    for n in range(10):
        other[(f"h{n}.example", "MX")] = [(10, f"mx{k}.h{n}.example") for k in range(10)]
        for k in range(10):
            other[(f"mx{k}.h{n}.example", "A")] = [f"198.51.100.{k + 1}"]
    return SlowDns({"spf.example": [record]}, other=other, delay=delay)


def test_the_whole_spf_evaluation_has_one_budget(receiver, partner, settings):
    settings.INBOUND_DNS_TIMEOUT_SECONDS = 1.0
    order = qr_order(partner)
    raw = (
        f"From: x@spf.example\r\nTo: {order.transfer_address}\r\nSubject: hi\r\n"
        f"Date: {format_datetime(timezone.now())}\r\nMessage-ID: <spf@spf.example>\r\n\r\nhi\r\n"
    ).encode()
    dns = spf_flood_dns(0.1)  # 111 lookups: 11 s without the budget
    with use_resolver(dns):
        started = time.monotonic()
        assert smtp_send(receiver, raw, [order.transfer_address], mail_from="x@spf.example")[0] == 250
        took = time.monotonic() - started
    spf = InboundMessage.objects.get(order=order).verdicts["auth"]["spf"]
    assert spf["result"] == "temperror" and "more than its 1 s" in spf["explanation"]
    assert len([q for q in dns.queries if q.endswith(" A")]) < 20
    assert took < 5


def test_a_pdf_bomb_is_decoded_for_10_s_at_most_then_a_case_opens(receiver, partner):
    order = qr_order(partner)
    mail = EmailMessage()
    mail["From"] = "Sandbox Tickets <transfers@sandbox.invalid>"
    mail["To"] = order.transfer_address
    mail["Subject"] = "Your 2 mobile tickets"
    mail["Date"] = format_datetime(timezone.now())
    mail["Message-ID"] = make_msgid(domain="sandbox.invalid")
    mail.set_content("Your tickets are attached.\n")
    bomb = pdf_bomb()
    assert len(bomb) < 64_000  # a small attachment: the cost is in the drawing, not the bytes
    mail.add_attachment(bomb, maintype="application", subtype="pdf", filename="tickets.pdf")
    raw = sandbox_sign(mail.as_bytes(policy=policy.SMTP))

    started = time.monotonic()
    assert smtp_send(receiver, raw, [order.transfer_address])[0] == 250
    took = time.monotonic() - started

    check = TicketFileCheck.objects.get(order=order)
    assert check.details["files"][0]["reading"] == "too_slow"
    assert check.seconds <= 11
    assert took < 20
    assert TransferCase.objects.get(order=order).kind == "unparsed"
    order.refresh_from_db()
    assert order.status == "awaiting_transfer"
