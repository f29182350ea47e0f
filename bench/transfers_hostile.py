"""What a hostile seller sends the transfer receiver, for the tests and the bench's hostile round
(bench/README.md): a signature flood, poison MIME, a PDF bomb and a smuggled To."""

from __future__ import annotations

import zlib


def pdf_bomb(lines: int = 45_000) -> bytes:
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
