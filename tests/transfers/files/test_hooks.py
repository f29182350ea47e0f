"""Where ticket files are checked: a pdf order's PDF once the order is confirmed (the order.status_changed
subscriber), and the attachments of mail to a mobile_qr order's transfer address."""

import io
import threading
from dataclasses import replace
from email.message import EmailMessage

import pytest
from django.db import connections
from PIL import Image

from bench.ticket_files import barcode_png, ticket_pdf
from orders.models import Order
from orders.services import order_transition
from orders.signals import Transition
from orders.transfers.files.services import (
    message_attachments_check,
    orders_without_file_work,
    ticket_file_check,
)
from orders.transfers.models import InboundMessage, TicketFileCheck, TransferCase
from tests.orders.conftest import order_form, pdf_upload, post_order

from .helpers import codes, file_order

S = Order.Status
K = TransferCase.Kind


def create_and_confirm(client, form, capture) -> Order:
    with capture(execute=True):
        response = post_order(client, form)
    assert response.status_code == 201, response.content
    return Order.objects.get(order_id=response.json()["data"]["order_id"])


def pdf_form(quote, data: bytes) -> dict:
    return order_form(
        quote, delivery_type="pdf", is_ready_to_deliver="true", in_hand_date=None, file=pdf_upload(data)
    )


@pytest.mark.django_db
def test_a_pdf_order_with_its_tickets_ends_ticket_received_once_confirmed(
    auth_client, quote, django_capture_on_commit_callbacks
):
    order = create_and_confirm(
        auth_client, pdf_form(quote, ticket_pdf(codes(2))), django_capture_on_commit_callbacks
    )

    assert order.status == S.TICKET_RECEIVED
    assert [(h.from_status, h.to_status) for h in order.status_history.all()] == [
        ("", "accepted"),
        ("accepted", "awaiting_transfer"),
        ("awaiting_transfer", "ticket_received"),
    ]
    assert order.transfer.source == "file" and order.transfer.state == "detected"
    check = TicketFileCheck.objects.get(order=order)
    assert check.verdict == "verified" and check.details["source"] == "pdf"


@pytest.mark.django_db
def test_a_pdf_order_whose_file_proves_nothing_waits_with_an_unparsed_case(
    auth_client, quote, django_capture_on_commit_callbacks
):
    fake = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"

    order = create_and_confirm(auth_client, pdf_form(quote, fake), django_capture_on_commit_callbacks)

    assert order.status == S.AWAITING_TRANSFER and order.transfer.state == "none"
    assert order.transfer.case_open is True
    assert list(order.transfer_cases.values_list("kind", flat=True)) == [K.UNPARSED]


@pytest.mark.django_db
def test_a_mobile_order_with_a_pdf_is_not_checked_at_confirmation(
    auth_client, quote, django_capture_on_commit_callbacks
):
    form = order_form(quote, delivery_type="mobile_qr", file=pdf_upload(ticket_pdf(codes(2))))
    order = create_and_confirm(auth_client, form, django_capture_on_commit_callbacks)
    assert order.status == S.AWAITING_TRANSFER
    assert not TicketFileCheck.objects.filter(order=order).exists()


@pytest.mark.django_db
def test_the_sweep_checks_a_pdf_the_subscriber_never_checked(auth_client, quote):
    from datetime import timedelta

    from django.utils import timezone

    from orders.transfers.files.services import ticket_files_sweep

    response = post_order(auth_client, pdf_form(quote, ticket_pdf(codes(2))))  # no commit: no subscriber ran
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])
    order = order_transition(
        order=order, to=S.AWAITING_TRANSFER, actor="system:confirmation", reason="Card charged"
    )
    assert ticket_files_sweep() == 0  # within the grace the subscriber is still expected

    assert ticket_files_sweep(now=timezone.now() + timedelta(minutes=11)) == 1

    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED
    assert ticket_files_sweep(now=timezone.now() + timedelta(minutes=11)) == 0


def transfer_mail(order, attachments: list[tuple[str, str, bytes]]) -> bytes:
    mail = EmailMessage()
    mail["From"] = "Seller <seller@example.org>"
    mail["To"] = order.transfer_address
    mail["Subject"] = "My tickets"
    mail.set_content("Here are the QR codes of my tickets.")
    for name, content_type, data in attachments:
        maintype, subtype = content_type.split("/")
        mail.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return mail.as_bytes()


def png(text: str) -> tuple[str, str, bytes]:
    return (f"{text[-4:]}.png", "image/png", barcode_png(text))


def stored_message(order, raw: bytes) -> InboundMessage:
    return InboundMessage.objects.create(
        channel="smtp",
        recipient=order.transfer_address,
        sha256=f"{hash(raw) & (2**63 - 1):064x}",
        order=order,
    )


@pytest.mark.django_db
def test_one_qr_image_per_ticket_attached_to_mail_moves_a_mobile_qr_order(partner):
    order = file_order(partner, quantity=2, delivery_type="mobile_qr")
    first, second = codes(2)
    raw = transfer_mail(order, [png(first), png(second), ("terms.pdf", "application/pdf", ticket_pdf([]))])

    check = message_attachments_check(stored_message(order, raw), order, raw)

    assert check.verdict == "verified" and check.details["source"] == "attachment"
    assert [f["name"] for f in check.details["files"]] == [
        f"{first[-4:]}.png",
        f"{second[-4:]}.png",
        "terms.pdf",
    ]
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED and order.transfer.source == "file"
    assert check.message.order_id == order.pk
    assert message_attachments_check(check.message, order, raw).pk == check.pk  # processed again: once


@pytest.mark.django_db
def test_mail_without_a_pdf_or_an_image_checks_nothing(partner):
    order = file_order(partner, quantity=2, delivery_type="mobile_qr")
    raw = transfer_mail(order, [("notes.txt", "text/plain", b"see you there")])
    assert message_attachments_check(stored_message(order, raw), order, raw) is None
    assert not TicketFileCheck.objects.exists()


@pytest.mark.django_db
def test_an_inline_logo_is_no_ticket_file_and_an_attached_image_without_a_barcode_is(partner):
    order = file_order(partner, quantity=2, delivery_type="mobile_qr")
    logo = io.BytesIO()
    Image.new("RGB", (120, 40), "navy").save(logo, format="PNG")
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "platform@example.org", order.transfer_address, "Hi"
    mail.set_content("text")
    mail.add_alternative('<p><img src="cid:logo"></p>', subtype="html")
    mail.get_payload()[1].add_related(logo.getvalue(), maintype="image", subtype="png", cid="<logo>")
    raw = mail.as_bytes()
    assert message_attachments_check(stored_message(order, raw), order, raw) is None

    raw = transfer_mail(order, [("photo.png", "image/png", logo.getvalue())])
    check = message_attachments_check(stored_message(order, raw), order, raw)
    assert check.verdict == "no_barcode"
    assert list(order.transfer_cases.values_list("kind", flat=True)) == [K.UNPARSED]


@pytest.mark.django_db
def test_more_than_twenty_attachments_are_refused_unread(partner):
    order = file_order(partner, quantity=21, delivery_type="mobile_qr")
    raw = transfer_mail(order, [png(text) for text in codes(21)])

    check = message_attachments_check(stored_message(order, raw), order, raw)

    assert check.verdict == "too_many_attachments" and check.barcodes == 0
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER
    assert list(order.transfer_cases.values_list("kind", flat=True)) == [K.UNPARSED]


@pytest.mark.django_db
def test_a_file_verified_before_confirmation_moves_the_order_once_it_awaits_the_transfer(
    partner, django_capture_on_commit_callbacks
):
    order = file_order(partner, quantity=1, delivery_type="mobile_qr", status=S.ACCEPTED)
    sheet = Image.open(io.BytesIO(barcode_png(codes(1)[0])))
    buffer = io.BytesIO()
    sheet.convert("RGB").save(buffer, format="JPEG", quality=92)
    raw = transfer_mail(order, [("ticket.jpg", "image/jpeg", buffer.getvalue())])
    assert message_attachments_check(stored_message(order, raw), order, raw).details["applied"] is False

    with django_capture_on_commit_callbacks(execute=True):
        order_transition(
            order=order, to=S.AWAITING_TRANSFER, actor="system:confirmation", reason="Card charged"
        )

    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED and order.transfer.source == "file"
    assert TicketFileCheck.objects.get(order=order).details["applied"] is True


@pytest.mark.django_db(transaction=True)
def test_two_orders_checked_at_once_with_a_shared_barcode_are_both_flagged(partner):
    orders = [file_order(partner, quantity=2) for _ in range(2)]
    shared, one, two = codes(3)
    files = [ticket_pdf([shared, one]), ticket_pdf([two, shared])]
    barrier = threading.Barrier(2)
    verdicts: list = [None, None]

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            verdicts[index] = ticket_file_check(order=orders[index], data=files[index]).verdict
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(verdicts) == ["held_by_other_order", "verified"]
    for order in orders:
        assert list(order.transfer_cases.values_list("kind", flat=True)) == [K.DUPLICATE_BARCODE]


@pytest.mark.django_db
def test_a_batch_of_moves_is_told_apart_in_one_statement_and_the_plain_orders_are_left_alone(
    partner, django_assert_num_queries
):
    pdf_with_file = file_order(partner, delivery_type="pdf")
    Order.objects.filter(pk=pdf_with_file.pk).update(ticket_file="tickets/seller.pdf")
    pdf_without_file = file_order(partner, delivery_type="pdf")
    verified_waiting = file_order(partner, delivery_type="mobile_qr")
    TicketFileCheck.objects.create(
        order=verified_waiting, file_sha256="0" * 64, verdict="verified", details={"applied": False}
    )
    applied_already = file_order(partner, delivery_type="mobile_qr")
    TicketFileCheck.objects.create(
        order=applied_already, file_sha256="1" * 64, verdict="verified", details={"applied": True}
    )
    plain = file_order(partner, delivery_type="mobile_transfer")
    orders = [pdf_with_file, pdf_without_file, verified_waiting, applied_already, plain]
    moves = [
        Transition(
            order_pk=o.pk, from_status="accepted", to_status="awaiting_transfer", at=o.created_at, actor="t"
        )
        for o in orders
    ]
    with django_assert_num_queries(1):
        idle = orders_without_file_work([*moves, replace(moves[0], order_pk=10**9)])
    assert idle == {pdf_without_file.pk, applied_already.pk, plain.pk, 10**9}
