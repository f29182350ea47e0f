"""Test mail kit for transfer detection: DKIM keys made in the test, the sandbox platform's transfer e-mail,
DKIM signing, and a resolver that publishes the keys.

    key = make_key("tickets.example", "k1")                  # RSA 2048 (bits=512 for a short key)
    raw = transfer_email(order.transfer_address, sender="Tickets <transfers@tickets.example>")
    signed = sign(raw, key)                                  # h=from:to:subject:date:message-id
    with use_resolver(resolver_for(key)):                    # orders.transfers.authenticity.dns
        verdict = authenticate(signed, message=..., order=order)

For the sandbox platform itself, sign with ``orders.transfers.testing.simulator.sandbox_sign`` (the service's own key,
answered by the service's resolver without any DNS) and leave the resolver alone, or install
``resolver_for()`` with no keys so nothing reaches real DNS.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.utils import timezone

from orders.transfers.authenticity.dns import StaticResolver

SANDBOX_FROM = "Sandbox Tickets <transfers@sandbox.invalid>"
SIGNED_HEADERS = ("from", "to", "subject", "date", "message-id")
SUBJECTS = {
    "transfer_offer": "You've been sent {quantity} tickets to {event}",
    "transfer_accepted": "Your tickets to {event} were accepted",
    "transfer_canceled": "Ticket transfer canceled: {event}",
}


@dataclass(frozen=True)
class DkimKey:
    domain: str
    selector: str
    private_pem: bytes  # PKCS#1 PEM, as dkimpy signs with
    public_b64: str  # DKIM p=: base64 of the DER SubjectPublicKeyInfo
    bits: int

    @property
    def dns_name(self) -> str:
        return f"{self.selector}._domainkey.{self.domain}"

    @property
    def txt(self) -> bytes:
        return f"v=DKIM1; k=rsa; p={self.public_b64}".encode()


def _probable_prime(n: int, rounds: int = 40) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for _ in range(rounds):
        x = pow(secrets.randbelow(n - 3) + 2, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _short_rsa_key(bits: int) -> rsa.RSAPrivateKey:
    """An RSA key below cryptography's 1024-bit floor for generation (a short key a forger might publish)."""
    e = 65537

    def prime(size: int) -> int:
        while True:
            candidate = secrets.randbits(size) | (3 << (size - 2)) | 1
            if (candidate - 1) % e and _probable_prime(candidate):
                return candidate

    p, q = prime(bits // 2), prime(bits // 2)
    d = pow(e, -1, (p - 1) * (q - 1))
    numbers = rsa.RSAPrivateNumbers(
        p,
        q,
        d,
        rsa.rsa_crt_dmp1(d, p),
        rsa.rsa_crt_dmq1(d, q),
        rsa.rsa_crt_iqmp(p, q),
        rsa.RSAPublicNumbers(e, p * q),
    )
    return numbers.private_key()


def make_key(domain: str = "tickets.example", selector: str = "k1", *, bits: int = 2048) -> DkimKey:
    """A fresh RSA key pair for ``selector._domainkey.domain``."""
    private = rsa.generate_private_key(65537, bits) if bits >= 1024 else _short_rsa_key(bits)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return DkimKey(domain, selector, pem, base64.b64encode(der).decode(), private.key_size)


def transfer_email(
    to: str,
    *,
    kind: str = "transfer_offer",
    sender: str = SANDBOX_FROM,
    event: str = "Skyline Festival",
    venue: str = "Harbor Arena",
    starts: str | None = None,
    section: str = "Lower 101",
    row: str = "A",
    seats: list[str] | None = ("1", "2"),
    quantity: int | None = None,
    date: datetime | None = None,
    message_id: str | None = None,
    subject: str | None = None,
    extra_headers: list[tuple[str, str]] = (),
    token: str | None = None,
    html: bool = False,
) -> bytes:
    """The sandbox platform's transfer e-mail (unsigned, CRLF), in the format of docs/partners/test-mode.md.
    ``seats=None`` is general admission (no Seats line). ``extra_headers`` are added after the usual ones.
    ``html=True`` makes it multipart/alternative: the same lines as text and as an HTML table."""
    # An evening a month ahead unless the test names its order's start.
    starts = starts or (timezone.now() + timedelta(days=30)).strftime("%Y-%m-%d 20:00")
    seats = list(seats) if seats is not None else None
    quantity = quantity if quantity is not None else (len(seats) if seats else 2)
    domain = sender.rpartition("@")[2].rstrip(">").strip() or "sandbox.invalid"
    headers = [
        ("From", sender),
        ("To", to),
        ("Subject", subject or SUBJECTS[kind].format(quantity=quantity, event=event)),
        ("Date", _rfc2822(date or timezone.now())),
        ("Message-ID", message_id or f"<{secrets.token_hex(12)}@{domain}>"),
        ("MIME-Version", "1.0"),
        *extra_headers,
    ]
    lines = [f"Event: {event}", f"Venue: {venue}", f"Date: {starts}", f"Section: {section}", f"Row: {row}"]
    if seats:
        lines.append("Seats: " + ", ".join(seats))
    lines.append(f"Tickets: {quantity}")
    lines.append(f"Accept your tickets: https://accept.{domain}/t/{token or secrets.token_urlsafe(12)}")
    text = "\r\n".join(lines) + "\r\n"
    if html:
        boundary = f"alt-{secrets.token_hex(8)}"
        headers.insert(6, ("Content-Type", f'multipart/alternative; boundary="{boundary}"'))
        cells = "".join(
            f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>"
            for k, _, v in (line.partition(": ") for line in lines)
        )
        body = (
            f"--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}"
            f"--{boundary}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
            f"<html><body><table>{cells}</table></body></html>\r\n--{boundary}--\r\n"
        )
    else:
        headers.insert(6, ("Content-Type", "text/plain; charset=utf-8"))
        body = text
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    return (head + "\r\n" + body).encode()


def _rfc2822(when: datetime) -> str:
    from email.utils import format_datetime

    return format_datetime(when)


def sign(
    raw: bytes,
    key: DkimKey,
    *,
    headers: tuple[str, ...] = SIGNED_HEADERS,
    length: bool = False,
    domain: str | None = None,
    selector: str | None = None,
) -> bytes:
    """``raw`` with a DKIM-Signature by ``key`` on top (relaxed/relaxed). ``domain``/``selector`` override the
    d=/s= tags (a signature claiming a key it was not made with); ``length`` adds l=."""
    signature = dkim.sign(
        raw,
        (selector or key.selector).encode(),
        (domain or key.domain).encode(),
        key.private_pem,
        canonicalize=(b"relaxed", b"relaxed"),
        include_headers=[h.encode() for h in headers],
        length=length,
    )
    return signature + raw


def resolver_for(*keys: DkimKey, extra: dict | None = None) -> StaticResolver:
    """A StaticResolver publishing each key's TXT record (plus ``extra`` names → [txt bytes] or an exception)."""
    records = {key.dns_name: [key.txt] for key in keys}
    records.update(extra or {})
    return StaticResolver(records)


def inbound_message(order, raw: bytes, *, recipient: str | None = None, **fields):
    """An ``InboundMessage`` of ``raw`` as the receiver stores it for ``order`` (not processed): the row
    ``authenticate`` is given. ``fields`` override (``channel``, ``peer``, ``mail_from``, ``helo``, ``verdicts``,
    ``received_at``, ``stage`` …)."""
    import hashlib

    from orders.transfers.models import InboundMessage

    values = {
        "channel": "smtp",
        "recipient": (recipient or order.transfer_address).lower(),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size": len(raw),
        "order": order,
        "received_at": timezone.now(),
    }
    values.update(fields)
    return InboundMessage.objects.create(**values)
