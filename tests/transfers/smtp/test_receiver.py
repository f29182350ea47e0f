"""The SMTP receiver (docs/operations/receiving-mail.md "Receiving mail"), spoken to over real SMTP: RCPT only for a transfer
address that takes mail, SIZE 10 MB, a message stored and committed before 250, a sender's retry stored once,
a database failure answered 451 so the sender tries again."""

from __future__ import annotations

import hashlib
import smtplib

import pytest
from django.db import OperationalError

from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage
from tests.conftest import make_partner
from tests.orders.factories import make_order

from .conftest import smtp_client

pytestmark = pytest.mark.django_db(transaction=True)


def message_for(address: str, body: str = "Tickets: 2") -> bytes:
    return (
        "From: Sandbox Tickets <transfers@sandbox.invalid>\r\n"
        f"To: {address}\r\n"
        "Subject: You've been sent 2 tickets to Skyline Festival\r\n"
        "Date: Thu, 25 Nov 2021 05:00:00 +0000\r\n"
        "Message-ID: <abc123@sandbox.invalid>\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        f"{body}\r\n"
    ).encode()


@pytest.fixture
def partner(transactional_db):
    return make_partner().partner


def rcpt(receiver, address: str) -> tuple[int, bytes]:
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        client.ehlo("mx.sandbox.invalid")
        client.mail("transfers@sandbox.invalid")
        return client.rcpt(address)


@pytest.mark.parametrize("status", ["accepted", "awaiting_transfer"])
def test_rcpt_is_accepted_for_the_transfer_address_of_an_order_waiting_for_its_tickets(
    receiver, partner, status
):
    order = make_order(partner, status=status)
    assert rcpt(receiver, order.transfer_address)[0] == 250
    # Case does not matter in the address, nor the angle brackets.
    assert rcpt(receiver, f"<{order.transfer_address.upper()}>")[0] == 250


@pytest.mark.parametrize("status", ["paid", "canceled", "expired"])
def test_rcpt_is_refused_for_an_order_that_takes_no_more_mail(receiver, partner, status):
    order = make_order(partner, status=status)
    code, text = rcpt(receiver, order.transfer_address)
    assert (code, text) == (550, b"5.1.1 No such transfer address")


def test_rcpt_is_refused_for_unknown_addresses_and_other_domains_no_relay(receiver, settings, partner):
    order = make_order(partner, status="awaiting_transfer")
    domain = settings.ORDER_TRANSFER_ADDRESS_DOMAIN
    for address in (
        f"ord-doesnotexist@{domain}",
        f"postmaster@{domain}",
        order.transfer_address.replace(f"@{domain}", "@elsewhere.example"),  # relaying elsewhere
        "someone@gmail.com",
    ):
        assert rcpt(receiver, address) == (550, b"5.1.1 No such transfer address"), address
    # A session with no accepted recipient cannot deliver: DATA is refused, nothing is stored.
    with smtp_client(f"127.0.0.1:{receiver.port}") as client, pytest.raises(smtplib.SMTPRecipientsRefused):
        client.sendmail("x@sandbox.invalid", [f"ord-nobody@{domain}"], message_for("x"))
    assert not InboundMessage.objects.exists()


def test_a_delivery_is_stored_and_committed_before_250_and_a_retry_is_stored_once(receiver, partner):
    order = make_order(partner, status="awaiting_transfer")
    other = make_order(partner, status="accepted")
    raw = message_for(order.transfer_address)
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        client.ehlo("mx.sandbox.invalid")
        refused = client.sendmail(
            "bounce@sandbox.invalid", [order.transfer_address, other.transfer_address], raw
        )
    assert refused == {}
    # 250 came after the commit: the rows are there (read on the test's own connection).
    rows = {m.recipient: m for m in InboundMessage.objects.all()}
    assert set(rows) == {order.transfer_address, other.transfer_address}
    stored = rows[order.transfer_address]
    assert stored.sha256 == hashlib.sha256(raw).hexdigest()
    assert (stored.channel, stored.peer, stored.helo, stored.mail_from) == (
        "smtp",
        "127.0.0.1",
        "mx.sandbox.invalid",
        "bounce@sandbox.invalid",
    )
    assert stored.order_id == order.pk and stored.size == len(raw)
    assert raw_read(stored) == raw
    # The sender's retry of the same bytes (it never saw our 250, say): answered 250, nothing new.
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        assert client.sendmail("bounce@sandbox.invalid", [order.transfer_address], raw) == {}
    assert InboundMessage.objects.filter(recipient=order.transfer_address).count() == 1


def test_size_is_advertised_and_a_larger_message_is_refused_552(receiver, partner, settings):
    order = make_order(partner, status="awaiting_transfer")
    limit = settings.INBOUND_MAX_BYTES
    assert limit == 10 * 1024 * 1024
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        client.ehlo("mx.sandbox.invalid")
        assert client.has_extn("size") and int(client.esmtp_features["size"]) == limit
        # Declared too large in MAIL FROM: refused before any data is sent.
        code, _ = client.mail("transfers@sandbox.invalid", [f"SIZE={limit + 1}"])
        assert code == 552
    big = message_for(order.transfer_address, body="x" * 76 + "\r\n") + (b"y" * 998 + b"\r\n") * (
        limit // 1000 + 10
    )
    assert len(big) > limit
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        # smtplib declares the size itself (MAIL FROM SIZE=): refused there.
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:
            client.sendmail("transfers@sandbox.invalid", [order.transfer_address], big)
        assert refused.value.smtp_code == 552
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        # A sender that declares nothing: the data itself is refused once it passes the limit.
        client.ehlo("mx.sandbox.invalid")
        assert client.mail("transfers@sandbox.invalid")[0] == 250
        assert client.rcpt(order.transfer_address)[0] == 250
        code, _ = client.data(big)
        assert code == 552
    assert not InboundMessage.objects.exists()
    # Just under the limit is taken.
    head = message_for(order.transfer_address)
    fits = head + (b"z" * 998 + b"\r\n") * ((limit - len(head) - 2000) // 1000)
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        assert client.sendmail("transfers@sandbox.invalid", [order.transfer_address], fits) == {}
    assert InboundMessage.objects.count() == 1


def test_a_database_failure_while_storing_answers_451_and_the_retry_is_stored(receiver, partner, monkeypatch):
    order = make_order(partner, status="awaiting_transfer")
    raw = message_for(order.transfer_address)
    real_save = InboundMessage.save
    failures = []

    def save_failing_once(self, *args, **kwargs):
        if not failures:
            failures.append(self.recipient)
            raise OperationalError("server closed the connection unexpectedly")
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(InboundMessage, "save", save_failing_once)
    with (
        smtp_client(f"127.0.0.1:{receiver.port}") as client,
        pytest.raises(smtplib.SMTPDataError) as deferred,
    ):
        client.sendmail("transfers@sandbox.invalid", [order.transfer_address], raw)
    assert deferred.value.smtp_code == 451 and deferred.value.smtp_error.startswith(b"4.3.0")
    assert not InboundMessage.objects.exists()
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        assert client.sendmail("transfers@sandbox.invalid", [order.transfer_address], raw) == {}
    assert InboundMessage.objects.filter(recipient=order.transfer_address).count() == 1
