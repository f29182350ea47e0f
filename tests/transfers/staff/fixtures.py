"""Transfer cases for the staff pages, built the way the pipeline leaves them: the platform's e-mail (DKIM-signed
with a key made here) stored through ``intake.message_receive``, its verdicts on the message, the evidence, the
order's transfer moved and the case opened through ``orders.transfers.decision.state``."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import dkim
from django.db import transaction
from django.utils import timezone

from orders import outbox
from orders.models import Order
from orders.transfers.decision import state
from orders.transfers.intake.services import message_receive
from orders.transfers.models import InboundMessage, TransferCase, TransferEvidence
from orders.transfers.verdicts import AuthVerdict, MatchResult

SELECTOR, DOMAIN = b"s2026", b"sandbox.invalid"
_KEYS: dict[str, tuple[bytes, bytes]] = {}
ACCEPT_LINK = "https://accept.sandbox.invalid/t/{}"
HOSTILE_HTML = (
    '<html><body><script>document.title="pwned"; window.pwned = 1;</script>'
    '<img src="http://tracker.invalid/pixel.gif" onerror="window.pwned = 2">'
    "<p>Event: Skyline Festival</p><p>Row: <b>B</b></p></body></html>"
)


def signing_key() -> tuple[bytes, bytes]:
    """(private key PEM, DNS TXT record) of a 2048-bit RSA key made for this test run."""
    if not _KEYS:
        import base64

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        public = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        _KEYS["k"] = (pem, b"v=DKIM1; k=rsa; p=" + base64.b64encode(public))
    return _KEYS["k"]


def transfer_mail(order: Order, *, row: str = "B", html: str | None = None, text: bool = True) -> bytes:
    """The sandbox platform's transfer offer for ``order`` (with ``row`` instead of the order's), DKIM-signed."""
    msg = EmailMessage()
    msg["From"] = "Sandbox Tickets <transfers@sandbox.invalid>"
    msg["To"] = order.transfer_address
    msg["Subject"] = f"You've been sent {order.quantity} tickets to Skyline Festival"
    msg["Date"] = format_datetime(timezone.now())
    msg["Message-ID"] = make_msgid(domain="sandbox.invalid")
    seats = ", ".join(str(i) for i in range(1, order.quantity + 1))
    body = (
        f"Event: Skyline Festival\nVenue: Harbor Arena\nDate: {timezone.now().year + 1}-12-12 20:00\nSection: Lower 101\n"
        f"Row: {row}\nSeats: {seats}\nTickets: {order.quantity}\n"
        f"Accept your tickets: {ACCEPT_LINK.format(order.order_id)}\n"
    )
    if text:
        msg.set_content(body)
        if html:
            msg.add_alternative(html, subtype="html")
    else:
        msg.set_content(html or "<p>empty</p>", subtype="html")
    raw = msg.as_bytes(policy=policy.SMTP)  # CRLF, as SMTP carries it
    pem, _ = signing_key()
    signature = dkim.sign(
        raw, SELECTOR, DOMAIN, pem, include_headers=[b"from", b"to", b"subject", b"date", b"message-id"]
    )
    return signature + raw


def _dns(name, timeout=5):
    return signing_key()[1] if name == SELECTOR + b"._domainkey." + DOMAIN + b"." else None


def mismatch_case(
    order: Order, *, raw: bytes | None = None, kind: str = TransferCase.Kind.MISMATCH
) -> TransferCase:
    """A case of ``kind`` on ``order`` from an authentic offer whose row differs, as the pipeline opens it.

    One transaction: the message is marked processed before its processing task is published on commit, so
    the pipeline (when present) finds it done and adds nothing."""
    raw = raw or transfer_mail(order)
    with transaction.atomic():
        message = message_receive(
            raw,
            recipients=[order.transfer_address],
            channel="smtp",
            mail_from="bounce@sandbox.invalid",
            peer="127.0.0.1",
            helo="mx.sandbox.invalid",
        )[0].message
        valid = dkim.verify(raw, dnsfunc=_dns)
        auth = AuthVerdict(
            authentic=valid,
            platform="sandbox",
            failures=[] if valid else ["DKIM signature does not verify"],
            dkim={
                "d": DOMAIN.decode(),
                "s": SELECTOR.decode(),
                "a": "rsa-sha256",
                "bits": 2048,
                "h": "from:to:subject:date:message-id",
                "result": "pass" if valid else "fail",
            },
            spf={"result": "pass", "domain": "sandbox.invalid"},
            header_from="transfers@sandbox.invalid",
            header_to=order.transfer_address,
        )
        seats = [str(i) for i in range(1, order.quantity + 1)]
        match = MatchResult(
            matched=False,
            fields={
                "event": {"order": "Skyline Festival", "mail": "Skyline Festival", "ok": True},
                "section": {"order": order.section_name_display, "mail": "Lower 101", "ok": True},
                "row": {"order": order.row_name_display, "mail": "B", "ok": False, "similarity": 0.5},
                "seats": {"order": seats, "mail": seats, "ok": True},
            },
            seats=seats,
            quantity=order.quantity,
        )
        InboundMessage.objects.filter(pk=message.pk).update(
            stage=InboundMessage.Stage.PROCESSED,
            outcome=InboundMessage.Outcome.CASE,
            authentic=valid,
            platform="sandbox",
            kind="transfer_offer",
            header_from="transfers@sandbox.invalid",
            header_subject=f"You've been sent {order.quantity} tickets to Skyline Festival",
            verdicts={"auth": auth.as_json(), "match": match.as_json()},
            processed_at=timezone.now(),
        )
        message.refresh_from_db()
        TransferEvidence.objects.create(
            order=order,
            message=message,
            kind=TransferEvidence.Kind.OFFER,
            fields={"row": "B"},
            seats=seats,
            quantity=order.quantity,
            matched=False,
            accept_link=ACCEPT_LINK.format(order.order_id),
        )
        if kind == TransferCase.Kind.MISMATCH:
            state.transfer_transition(
                order=order,
                to=Order.TransferState.MISMATCH,
                actor="system:transfers",
                reason_code=outbox.REASON_TRANSFER_MISMATCH,
                quantity_detected=0,
                source=Order.TransferSource.EMAIL,
            )
        return state.case_open(
            order=order,
            kind=kind,
            summary=f"The transfer's row is B; the order's is {order.row_name_display}.",
            message=message,
            details={"fields": match.fields},
        )


def detected_order(partner) -> Order:
    """A ``ticket_received`` order whose transfer was detected by e-mail and not yet accepted on the platform."""
    from tests.orders.factories import make_order

    order = make_order(partner, status="awaiting_transfer")
    return state.order_receive(order=order, source="email", actor="system:transfers", reason="test setup")
