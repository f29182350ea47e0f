"""A mobile_qr order's QR codes arrive as attachments of the platform's authentic mail to its transfer
address: the files decide, as a ticket PDF does for a pdf order."""

from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import pytest
from django.utils import timezone

from bench.ticket_files import barcode_png
from orders.models import Notification, Order
from orders.services import order_create, order_transition
from orders.transfers.intake.services import message_receive
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.testing.simulator import sandbox_sign
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quote_token
from tests.transfers.files.helpers import codes

S = Order.Status


def test_qr_order(partner, quantity: int = 2) -> Order:
    row = order_row(available_quantity=50)
    quote = QuoteFactory(partner=partner, row=row, quantity=quantity, livemode=False)
    order = order_create(
        partner_pk=partner.pk,
        actor=f"partner:{partner.public_id}",
        quote_id=quote_token(quote),
        delivery_type="mobile_qr",
        is_ready_to_deliver=False,
        in_hand_date=quote.event.event_date - timedelta(days=7),
        livemode=False,
    )
    return order_transition(order=order, to=S.AWAITING_TRANSFER, actor="staff:test", reason="test setup")


test_qr_order.__test__ = False


def qr_mail(order: Order, tickets: list[str]) -> bytes:
    mail = EmailMessage()
    mail["From"] = "Sandbox Tickets <transfers@sandbox.invalid>"
    mail["To"] = order.transfer_address
    mail["Subject"] = f"Your {len(tickets)} mobile tickets"
    mail["Date"] = format_datetime(timezone.now())
    mail["Message-ID"] = make_msgid(domain="sandbox.invalid")
    mail.set_content("Your tickets are attached: show the QR codes at the gate.\n")
    for n, text in enumerate(tickets, start=1):
        mail.add_attachment(barcode_png(text), maintype="image", subtype="png", filename=f"ticket-{n}.png")
    return sandbox_sign(mail.as_bytes(policy=policy.SMTP))  # CRLF, as SMTP carries it


@pytest.mark.django_db
def test_authentic_mail_with_the_orders_qr_codes_moves_it_to_ticket_received(
    partner, django_capture_on_commit_callbacks
):
    order = test_qr_order(partner)
    with django_capture_on_commit_callbacks(execute=True):
        message_receive(qr_mail(order, codes(2)), recipients=[order.transfer_address], channel="smtp")

    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED
    assert (order.transfer.state, order.transfer.source) == ("detected", "file")
    changed = Notification.objects.filter(order=order, type="order.status_changed").last()
    assert changed.payload["data"]["reason"] == "file_verified"
    message = InboundMessage.objects.get(order=order)
    assert message.authentic and message.outcome == InboundMessage.Outcome.MATCHED


@pytest.mark.django_db
def test_one_qr_code_for_two_tickets_opens_a_mismatch_case_and_the_order_waits(
    partner, django_capture_on_commit_callbacks
):
    order = test_qr_order(partner)
    with django_capture_on_commit_callbacks(execute=True):
        message_receive(qr_mail(order, codes(1)), recipients=[order.transfer_address], channel="smtp")

    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER
    assert (
        TransferCase.objects.filter(order=order, kind=TransferCase.Kind.MISMATCH, state="open").count() == 1
    )
