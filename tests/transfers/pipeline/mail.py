"""Transfer e-mails of the sandbox platform for the pipeline tests, DKIM-signed for real.

``Signer`` holds an RSA key made in the test, with the DKIM TXT record a resolver of the test publishes (or
fails to give, for ``temperror``); the service's own authentication verifies every message.
"""

from __future__ import annotations

import email.policy
import uuid
from email.message import EmailMessage
from email.utils import format_datetime

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.utils import timezone

SUBJECTS = {
    "transfer_offer": "You've been sent {n} ticket{s} to {event}",
    "transfer_accepted": "Your tickets to {event} were accepted",
    "transfer_canceled": "Ticket transfer canceled: {event}",
}
SIGNED = [b"from", b"to", b"subject", b"date", b"message-id"]


def order_body(
    order, *, seats=None, quantity=None, row=None, section=None, start=None, event=None, link=True
):
    event_obj = order.event
    lines = [
        f"Event: {event or event_obj.name}",
        f"Venue: {event_obj.venue.name}",
        f"Date: {start or event_obj.venue_starts_at.strftime('%Y-%m-%d %H:%M')}",
        f"Section: {section or order.section_name}",
        f"Row: {row or order.row_name}",
    ]
    if seats:
        lines.append("Seats: " + ", ".join(str(s) for s in seats))
    lines.append(
        f"Tickets: {quantity if quantity is not None else (len(seats) if seats else order.quantity)}"
    )
    if link:
        lines.append(f"Accept your tickets: https://accept.sandbox.invalid/t/{uuid.uuid4().hex}")
    return "\n".join(lines) + "\n"


def compose(order, kind="transfer_offer", *, body=None, html=False, **fields) -> bytes:
    """The sandbox platform's e-mail to ``order``'s transfer address (unsigned)."""
    body = body if body is not None else order_body(order, **fields)
    n = fields.get("quantity") or len(fields.get("seats") or []) or order.quantity
    message = EmailMessage()
    message["From"] = "Sandbox Tickets <transfers@sandbox.invalid>"
    message["To"] = order.transfer_address
    message["Subject"] = SUBJECTS[kind].format(n=n, s="" if n == 1 else "s", event=order.event.name)
    message["Date"] = format_datetime(timezone.now())
    message["Message-ID"] = f"<{uuid.uuid4().hex}@sandbox.invalid>"
    if html:
        markup = "".join(f"<p>{line}</p>" for line in body.splitlines())
        message.set_content(f"<html><body>{markup}</body></html>", subtype="html")
    else:
        message.set_content(body)
    return message.as_bytes(policy=email.policy.SMTP)  # CRLF, as SMTP carries it


class Signer:
    """An RSA key of ``domain`` (made here) and its DKIM TXT record."""

    def __init__(self, domain: str = "sandbox.invalid", selector: str = "sandbox", bits: int = 2048):
        self.domain, self.selector = domain, selector
        key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        self.private_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        public_der = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        import base64

        self.txt = b"v=DKIM1; k=rsa; p=" + base64.b64encode(public_der)
        self.record_name = f"{selector}._domainkey.{domain}"

    def sign(self, raw: bytes) -> bytes:
        signature = dkim.sign(
            raw, self.selector.encode(), self.domain.encode(), self.private_pem, include_headers=SIGNED
        )
        return signature + raw
