"""A seller attacking the receiver over SMTP (docs/operations/receiving-mail.md "Receiving mail"): a bare CR smuggling a second
To into a genuine signed mail, a signature flood, an oversized header section, weak or partial signatures,
and the receiver's caps on recipients, sessions and the time per command. Each attack is sent to the real
receiver; the order it aims at never moves."""

from __future__ import annotations

import re
import socket
from email.utils import format_datetime

import dkim
import pytest
from django.utils import timezone

from orders.models import Order
from orders.transfers.intake import smtp as smtp_module
from orders.transfers.models import InboundMessage, TransferCase
from tests.conftest import make_partner
from tests.faults.live import wait_for
from tests.orders.factories import make_order
from tests.transfers.e2e.conftest import PLATFORM, PLATFORM_FROM, genuine, mail_for
from tests.transfers.mailkit import sign

from .conftest import smtp_send

pytestmark = pytest.mark.django_db(transaction=True)


def smuggled(order: Order, other: Order) -> bytes:
    """The genuine signed mail of ``other`` with an unsigned line on top hiding a To of ``order`` behind a bare
    CR (or LF): one To for dkimpy, the injected one first for Python's ``email``."""
    return b"X-Note: x\rTo: " + order.transfer_address.encode() + b"\r\n" + genuine(other)


def status(order: Order) -> tuple[str, str]:
    order.refresh_from_db()
    return order.status, order.transfer.state


def test_a_bare_cr_smuggling_a_second_to_is_refused_at_data_and_moves_nothing(receiver, waiting_orders, dns):
    order, other = waiting_orders(), waiting_orders()
    code, text = smtp_send(receiver, smuggled(order, other), [order.transfer_address])
    assert code == 554 and b"bare CR" in text
    assert status(order) == ("awaiting_transfer", "none")
    assert not InboundMessage.objects.exists()
    # The same mail with a bare LF instead, and the mail as the platform sent it: the latter still moves its own.
    bare_lf = b"X-Note: x\nTo: " + order.transfer_address.encode() + b"\r\n" + genuine(other)
    assert smtp_send(receiver, bare_lf, [order.transfer_address])[0] == 554
    assert smtp_send(receiver, genuine(other), [other.transfer_address])[0] == 250
    assert status(other) == ("ticket_received", "detected") and status(order) == ("awaiting_transfer", "none")


def test_the_smuggled_to_handed_over_without_the_receiver_opens_a_case_that_does_not_hold_expiry(
    waiting_orders, dns, django_capture_on_commit_callbacks
):
    """A provider's webhook cannot refuse at DATA: the same bytes reach the processing, which reads nothing."""
    from orders.transfers.intake import services as intake

    order, other = waiting_orders(), waiting_orders()
    with django_capture_on_commit_callbacks(execute=True):
        intake.message_receive(
            smuggled(order, other), recipients=[order.transfer_address], channel="postmark", peer="Postmark"
        )
    message = InboundMessage.objects.get(order=order)
    assert (message.stage, message.outcome, message.authentic) == ("processed", "case", False)
    case = TransferCase.objects.get(order=order)
    assert case.kind == "unverifiable" and "bare CR" in case.summary and case.defers_expiry is False
    assert status(order) == ("awaiting_transfer", "none")


def test_five_signatures_are_read_and_a_sixth_is_refused_at_data(receiver, waiting_orders, dns):
    order, flooded = waiting_orders(), waiting_orders()
    signed = genuine(order)
    signature = signed[: signed.index(b"From: ")]
    five = signature * 4 + signed
    assert smtp_send(receiver, five, [order.transfer_address])[0] == 250
    assert status(order) == ("ticket_received", "detected")

    six = signature * 5 + genuine(flooded)
    code, text = smtp_send(receiver, six, [flooded.transfer_address])
    assert code == 554 and b"6 DKIM-Signature headers" in text
    assert status(flooded) == ("awaiting_transfer", "none")
    assert not InboundMessage.objects.filter(order=flooded).exists()


def test_a_header_section_over_64_kb_is_refused_at_data(receiver, waiting_orders, dns):
    order = waiting_orders()
    signed = genuine(order)

    def padded(size: int) -> bytes:
        line = b"X-Pad: " + b"p" * 70 + b"\r\n"
        head = signed.index(b"\r\n\r\n") + 2
        lines = (size - head) // len(line)
        return line * lines + signed

    within = padded(63 * 1024)
    assert smtp_send(receiver, within, [order.transfer_address])[0] == 250
    assert status(order) == ("ticket_received", "detected")

    other = waiting_orders()
    code, text = smtp_send(receiver, padded(70 * 1024), [other.transfer_address])
    assert code == 554 and b"larger than 64 KB" in text
    assert not InboundMessage.objects.filter(order=other).exists()


def test_an_rsa_sha1_signature_is_refused(receiver, waiting_orders, platform, platform_key, dns):
    order = waiting_orders(primary_site=PLATFORM)
    raw = mail_for(order, sender=PLATFORM_FROM)
    sha1 = (
        dkim.sign(
            raw,
            platform_key.selector.encode(),
            platform_key.domain.encode(),
            platform_key.private_pem,
            canonicalize=(b"relaxed", b"relaxed"),
            signature_algorithm=b"rsa-sha1",
            include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
        )
        + raw
    )
    assert (
        smtp_send(receiver, sha1, [order.transfer_address], mail_from="t@mail.tickets-example.com")[0] == 250
    )
    message = InboundMessage.objects.get(order=order)
    assert message.authentic is False
    case = TransferCase.objects.get(order=order)
    assert case.kind == "unverified" and "rsa-sha1 is not accepted" in case.summary
    assert status(order) == ("awaiting_transfer", "none")


@pytest.mark.parametrize("variant", ["unsigned", "missing"])
def test_a_message_id_that_is_not_signed_opens_unverified(
    receiver,
    waiting_orders,
    platform,
    platform_key,
    dns,
    variant,
):
    order = waiting_orders(primary_site=PLATFORM)
    raw = mail_for(order, sender=PLATFORM_FROM)
    if variant == "missing":
        raw = re.sub(rb"Message-ID: [^\r]*\r\n", b"", raw)
        signed = sign(raw, platform_key)
    else:
        signed = sign(raw, platform_key, headers=("from", "to", "subject", "date"))
    smtp_send(receiver, signed, [order.transfer_address], mail_from="t@mail.tickets-example.com")
    case = TransferCase.objects.get(order=order)
    assert case.kind == "unverified" and case.defers_expiry is False
    expected = "0 Message-id headers" if variant == "missing" else "does not cover message-id"
    assert expected in case.summary
    assert status(order) == ("awaiting_transfer", "none")


def test_a_sixth_recipient_is_refused_with_452(receiver, transactional_db):
    partner = make_partner().partner
    orders = [make_order(partner, status="awaiting_transfer") for _ in range(6)]
    raw = (
        "From: x@sandbox.invalid\r\nTo: x@sandbox.invalid\r\nSubject: s\r\n"
        f"Date: {format_datetime(timezone.now())}\r\nMessage-ID: <r@sandbox.invalid>\r\n\r\nbody\r\n"
    ).encode()
    with smtplib_client(receiver) as client:
        client.ehlo("mx.sandbox.invalid")
        client.mail("x@sandbox.invalid")
        codes = [client.rcpt(o.transfer_address)[0] for o in orders]
        assert codes == [250, 250, 250, 250, 250, 452]
        assert client.data(raw)[0] == 250
    assert InboundMessage.objects.count() == 5
    assert not InboundMessage.objects.filter(order=orders[5]).exists()


def smtplib_client(receiver):
    from .conftest import smtp_client

    return smtp_client(f"127.0.0.1:{receiver.port}")


def _banner(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(1024)
        if not chunk:
            break
        data += chunk
    return data


def test_the_fifty_first_session_at_once_is_answered_421(receiver):
    sessions = []
    try:
        for _ in range(smtp_module.MAX_SESSIONS):
            sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)
            sessions.append(sock)
            assert _banner(sock).startswith(b"220 ")
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as extra:
            assert _banner(extra).startswith(b"421 ")
            assert extra.recv(1024) == b""  # and closed
        sessions.pop().close()
        # A session that ended frees its place.
        assert wait_for(lambda: _fresh_session_banner(receiver).startswith(b"220 "), timeout=10)
    finally:
        for sock in sessions:
            sock.close()


def _fresh_session_banner(receiver) -> bytes:
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as sock:
        return _banner(sock)


def test_a_command_whose_data_trickles_past_the_time_per_command_is_cut(
    receiver, transactional_db, monkeypatch
):
    monkeypatch.setattr(smtp_module, "COMMAND_TIMEOUT_SECONDS", 1)
    order = make_order(make_partner().partner, status="awaiting_transfer")
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as sock:
        assert _banner(sock).startswith(b"220 ")
        for command in (b"HELO mx.sandbox.invalid", b"MAIL FROM:<x@sandbox.invalid>"):
            sock.sendall(command + b"\r\n")
            assert _banner(sock).startswith(b"250")
        sock.sendall(b"RCPT TO:<" + order.transfer_address.encode() + b">\r\n")
        assert _banner(sock).startswith(b"250")
        sock.sendall(b"DATA\r\n")
        assert _banner(sock).startswith(b"354")
        sock.sendall(b"Subject: a line now, the rest never\r\n")
        # The session is closed by the receiver (recv returns b"" at its end), well before this deadline.
        sock.settimeout(15)
        rest = b""
        while chunk := sock.recv(1024):
            rest += chunk
    assert not InboundMessage.objects.exists()
