"""Transfer e-mails of the sandbox platform for the pipeline tests, DKIM-signed for real.

``Signer`` holds an RSA key made in the test and answers its own DNS record; ``verify`` is a DKIM
verification (dkimpy over the raw bytes) with the contract's header checks, used where the tests need a DNS
that fails for now (``temperror``). When the service's own authentication (``orders.transfers.auth``) and
the sandbox signer are present, ``sandbox_signing`` signs with the sandbox key and the real authentication
runs (``process.AUTHENTICATE = None``).
"""

from __future__ import annotations

import email
import importlib.util
import uuid
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.utils import timezone

from orders.transfers.verdicts import AuthVerdict

SUBJECTS = {
    "transfer_offer": "You've been sent {n} ticket{s} to {event}",
    "transfer_accepted": "Your tickets to {event} were accepted",
    "transfer_canceled": "Ticket transfer canceled: {event}",
}
SIGNED = [b"from", b"to", b"subject", b"date", b"message-id"]


def real_auth_available() -> bool:
    return (
        importlib.util.find_spec("orders.transfers.auth") is not None
        and importlib.util.find_spec("orders.transfers.sandbox") is not None
    )


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
    return message.as_bytes()


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


class TempDnsError(Exception):
    pass


def verifier(records: dict[str, bytes], *, failing: bool = False):
    """An authenticator over dkimpy: the signature valid over the raw bytes with the key of ``records`` (or, with
    ``failing``, a DNS that fails for now), h= covering from/to/subject/date, d= the From's domain, the signed
    To holding the order's transfer address."""

    def dnsfunc(name, timeout=5):
        if failing:
            raise TempDnsError(name)
        key = name.decode() if isinstance(name, bytes) else name
        return records.get(key.rstrip("."), b"")

    def authenticate(raw: bytes, *, message, order) -> AuthVerdict:
        parsed = email.message_from_bytes(raw)
        header_from = parseaddr(str(parsed.get("from", "")))[1]
        verdict = AuthVerdict(
            authentic=False,
            header_from=header_from,
            header_to=str(parsed.get("to", "")),
            header_subject=str(parsed.get("subject", "")),
            message_id=str(parsed.get("message-id", "")),
        )
        d = dkim.DKIM(raw)
        try:
            ok = d.verify(dnsfunc=dnsfunc)
        except TempDnsError as exc:
            verdict.temperror = True
            verdict.failures.append(f"DNS lookup failed for now: {exc}")
            return verdict
        domain = (d.domain or b"").decode()
        verdict.dkim = {"d": domain, "result": "pass" if ok else "fail"}
        signed = {h.lower() for h in (d.include_headers or [])}
        if not ok:
            verdict.failures.append("DKIM signature invalid")
        if not {b"from", b"to", b"subject", b"date"} <= signed:
            verdict.failures.append("h= does not cover from, to, subject and date")
        if header_from.rpartition("@")[2].lower() != domain.lower():
            verdict.failures.append("d= is not the From domain")
        if order.transfer_address not in verdict.header_to:
            verdict.failures.append("the signed To is not the order's transfer address")
        verdict.authentic = not verdict.failures
        verdict.case_kind = "" if verdict.authentic else "unverified"
        verdict.sandbox = domain == "sandbox.invalid"
        verdict.platform = "sandbox" if verdict.sandbox else ""
        return verdict

    return authenticate
