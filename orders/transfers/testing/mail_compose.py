"""Test mode's transfer e-mails: the sandbox platform's message for a test order, composed in the platform's
fixed format (``platforms/sandbox.yaml`` reads it), signed with the sandbox key and sent through the real SMTP
receiver (docs/partners/test-mode.md "Simulating the ticket transfer").

Variants: ``match`` (the order as it is), ``partial`` (fewer seats than the quantity), ``wrong_row`` (another
row) and ``forged`` (signed with a throwaway key that the sandbox's DNS record does not hold: it fails DKIM).
"""

from __future__ import annotations

import hashlib
import secrets
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from zoneinfo import ZoneInfo

from django.conf import settings

from orders.models import Order

VARIANTS = ("match", "partial", "wrong_row", "forged")
KINDS = ("transfer_offer", "transfer_accepted", "transfer_canceled")
SANDBOX_DOMAIN = "sandbox.invalid"
SIGNED_HEADERS = (b"from", b"to", b"subject", b"date", b"message-id")
# The statuses a simulated transfer may be sent for: the order's transfer address takes mail and the order
# still waits for its tickets.
SIMULATE_STATUSES = (Order.Status.ACCEPTED, Order.Status.AWAITING_TRANSFER)


class ReceiverUnavailable(Exception):
    """No SMTP receiver answered at ``INBOUND_SMTP_LISTEN``, or it refused the message for now."""


class RecipientRefused(Exception):
    """The receiver refused the order's transfer address (550): the order takes no mail now."""


@dataclass(frozen=True)
class SentTransfer:
    order_id: str
    variant: str
    kind: str
    recipient: str
    message_id: str
    sha256: str
    size: int
    listen: str


def _seats(order: Order) -> list[str]:
    if order.general_admission:
        return []
    return [str(n) for n in range(1, order.quantity + 1)]


def _wrong_row(row: str) -> str:
    """A row that normalises to something else than ``row`` (the matcher compares case-insensitively)."""
    if row.isdigit():
        return str(int(row) + 1)
    if len(row) == 1 and row.isalpha():
        return "Z" if row.upper() != "Z" else "Y"
    return f"{row}X"


def compose_sandbox_transfer(
    order: Order, variant: str = "match", kind: str = "transfer_offer", seats: list[str] | None = None
) -> bytes:
    """The sandbox platform's e-mail about ``order``'s tickets (unsigned), as raw bytes with CRLF endings."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    event = order.event
    venue = event.venue
    row = order.row_name_display or order.row_name
    seats = list(seats) if seats is not None else _seats(order)
    quantity = len(seats) if seats else order.quantity
    if variant == "partial":
        # Half the tickets, at least one fewer than the order's quantity (and at least one).
        if order.quantity < 2:
            raise ValueError("the partial variant needs an order of at least 2 tickets")
        quantity = max(1, min(order.quantity - 1, order.quantity // 2))
        seats = seats[:quantity]
    if variant == "wrong_row":
        row = _wrong_row(row)
    tz = ZoneInfo(event.timezone or venue.timezone or "UTC")
    start = event.starts_at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    subject = {
        "transfer_offer": f"You've been sent {quantity} ticket{'s' if quantity != 1 else ''} to {event.name}",
        "transfer_accepted": f"Your tickets to {event.name} were accepted",
        "transfer_canceled": f"Ticket transfer canceled: {event.name}",
    }[kind]
    lines = [
        f"Event: {event.name}",
        f"Venue: {venue.name}",
        f"Date: {start}",
        f"Section: {order.section_name_display or order.section_name}",
        f"Row: {row}",
    ]
    if seats:
        lines.append(f"Seats: {', '.join(seats)}")
    lines.append(f"Tickets: {quantity}")
    if kind == "transfer_offer":
        lines.append(f"Accept your tickets: https://accept.{SANDBOX_DOMAIN}/t/{secrets.token_urlsafe(18)}")
    message = EmailMessage()
    message["From"] = f"Sandbox Tickets <transfers@{SANDBOX_DOMAIN}>"
    message["To"] = order.transfer_address
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(idstring=secrets.token_hex(8), domain=SANDBOX_DOMAIN)
    message.set_content("\n".join(lines) + "\n", charset="utf-8")
    return message.as_bytes(policy=message.policy.clone(linesep="\r\n"))


def forged_sign(raw: bytes) -> bytes:
    """``raw`` signed as d=sandbox.invalid with a key made now and thrown away: the signature cannot verify
    against the sandbox's published key, which is what a forger's mail looks like."""
    import dkim
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    signature = dkim.sign(raw, b"sandbox", SANDBOX_DOMAIN.encode(), pem, include_headers=list(SIGNED_HEADERS))
    return signature + raw


def sign_for_variant(raw: bytes, variant: str) -> bytes:
    if variant == "forged":
        return forged_sign(raw)
    from orders.transfers.testing.simulator import sandbox_sign

    return sandbox_sign(raw)


def listen_address(listen: str | None = None) -> tuple[str, int]:
    host, _, port = (listen or settings.INBOUND_SMTP_LISTEN).rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def smtp_send(raw: bytes, *, recipient: str, listen: str | None = None, timeout: float = 30.0) -> None:
    """Hand ``raw`` to the receiver at ``listen`` (``INBOUND_SMTP_LISTEN``) over SMTP; the receiver answers
    250 only once the message is stored. Raises ``ReceiverUnavailable`` when no receiver takes it now, and
    ``RecipientRefused`` when it refuses the address (550)."""
    host, port = listen_address(listen)
    try:
        with smtplib.SMTP(host, port, timeout=timeout, local_hostname="sandbox.invalid") as client:
            client.sendmail(f"transfers@{SANDBOX_DOMAIN}", [recipient], raw)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        if all(400 <= code < 500 for code in codes):
            raise ReceiverUnavailable(f"the receiver answered {codes} for the recipient") from exc
        raise RecipientRefused(str(exc.recipients)) from exc
    except smtplib.SMTPResponseException as exc:
        if 400 <= exc.smtp_code < 500:
            raise ReceiverUnavailable(f"the receiver answered {exc.smtp_code} {exc.smtp_error!r}") from exc
        raise
    except (OSError, smtplib.SMTPException) as exc:
        raise ReceiverUnavailable(f"no SMTP receiver at {host}:{port} ({exc})") from exc


def send_test_transfer(
    order: Order, variant: str = "match", kind: str = "transfer_offer", listen: str | None = None
) -> SentTransfer:
    """Compose, sign and send the sandbox platform's e-mail for the test order ``order`` through the receiver."""
    if order.livemode:
        raise ValueError("simulated transfers are for test-mode orders only")
    raw = sign_for_variant(compose_sandbox_transfer(order, variant, kind), variant)
    smtp_send(raw, recipient=order.transfer_address, listen=listen)
    message_id = ""
    for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"message-id:"):
            message_id = line.split(b":", 1)[1].strip().decode()
    return SentTransfer(
        order_id=order.order_id,
        variant=variant,
        kind=kind,
        recipient=order.transfer_address,
        message_id=message_id,
        sha256=hashlib.sha256(raw).hexdigest(),
        size=len(raw),
        listen=settings.INBOUND_SMTP_LISTEN if listen is None else listen,
    )


__all__ = [
    "KINDS",
    "SIMULATE_STATUSES",
    "VARIANTS",
    "ReceiverUnavailable",
    "RecipientRefused",
    "SentTransfer",
    "compose_sandbox_transfer",
    "send_test_transfer",
    "smtp_send",
]
