"""What a hostile seller sends the transfer receiver, for the tests and the bench's hostile round
(bench/README.md): a signature flood, poison MIME, a PDF bomb and a smuggled To."""

from __future__ import annotations

import zlib


def pdf_bomb(lines: int = 300_000) -> bytes:
    """A one-page PDF of ``lines`` stroked lines: a few KB compressed, seconds to minutes of rendering."""
    ops = b"".join(
        b"%d %d m %d %d l S\n" % (i % 120 * 5, i % 120 * 6, 600 - i % 120 * 5, 800 - i % 60 * 13)
        for i in range(lines)
    )
    stream = zlib.compress(ops, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 800] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def signature_flood(signed: bytes, size: int = 1_000_000) -> bytes:
    """``signed`` (one DKIM-Signature on top) with its signature repeated until the message is ``size`` bytes:
    thousands of signatures, each of which a naive verifier re-reads the whole message for."""
    signature = signed[: signed.index(b"From: ")]
    copies = max(1, -(-(size - len(signed)) // len(signature)))  # rounded up: at least size bytes
    return signature * copies + signed


def poison_nest(to: str, depth: int = 1000, *, message_id: str = "nest") -> bytes:
    """An unsigned message of ``depth`` nested multiparts (Python's parser recurses once per level)."""
    from email.utils import format_datetime

    from django.utils import timezone

    head = (
        "From: Sandbox Tickets <transfers@sandbox.invalid>\r\n"
        f"To: {to}\r\nSubject: You've been sent 2 tickets to Skyline Festival\r\n"
        f"Date: {format_datetime(timezone.now())}\r\n"
        f"Message-ID: <{message_id}@sandbox.invalid>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="b0"\r\n\r\n'
    )
    opening = "".join(
        f'--b{level}\r\nContent-Type: multipart/mixed; boundary="b{level + 1}"\r\n\r\n'
        for level in range(depth)
    )
    closing = "".join(f"--b{level}--\r\n" for level in reversed(range(depth + 1)))
    return (head + opening + f"--b{depth}\r\nContent-Type: text/plain\r\n\r\nhi\r\n" + closing).encode()


def bomb_mail(to: str, *, lines: int = 300_000) -> bytes:
    """A mobile_qr transfer mail (unsigned, CRLF) whose attachment is ``pdf_bomb(lines)``."""
    from email import policy
    from email.message import EmailMessage
    from email.utils import format_datetime, make_msgid

    from django.utils import timezone

    mail = EmailMessage()
    mail["From"] = "Sandbox Tickets <transfers@sandbox.invalid>"
    mail["To"] = to
    mail["Subject"] = "Your 2 mobile tickets"
    mail["Date"] = format_datetime(timezone.now())
    mail["Message-ID"] = make_msgid(domain="sandbox.invalid")
    mail.set_content("Your tickets are attached.\n")
    mail.add_attachment(pdf_bomb(lines), maintype="application", subtype="pdf", filename="tickets.pdf")
    return mail.as_bytes(policy=policy.SMTP)
