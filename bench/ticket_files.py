"""Ticket files made to order, and the time the service takes to read them.

``ticket_pdf`` writes a PDF of tickets (fpdf2), one barcode per ticket: QR codes drawn by segno, PDF417,
Aztec, Data Matrix and Code 128 by zxing-cpp's writer. The tests of ``orders.transfers.files.services`` use it, and
so does ``read_timing``, the seconds per page ``orders.transfers.reading.barcodes.ticket_file_read`` takes over a
20-page file (the benchmark of transfer detection reports it)::

    .venv/bin/python -m bench.ticket_files            # 20 pages, 3 rounds
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time

import segno
import zxingcpp
from fpdf import FPDF
from PIL import Image

SYMBOLOGIES = ("QRCode", "PDF417", "Aztec", "DataMatrix", "Code128")
# Printed width of each symbology on the ticket, in millimetres.
WIDTH_MM = {"QRCode": 45, "PDF417": 90, "Aztec": 40, "DataMatrix": 35, "Code128": 100}


def barcode_png(text: str, symbology: str = "QRCode") -> bytes:
    """A PNG of ``text`` as a ``symbology`` barcode, black on white with its quiet zone."""
    buffer = io.BytesIO()
    if symbology == "QRCode":
        segno.make(text, error="m", micro=False).save(buffer, kind="png", scale=8, border=4)
        return buffer.getvalue()
    symbol = zxingcpp.create_barcode(text, getattr(zxingcpp.BarcodeFormat, symbology))
    image = symbol.to_image(scale=4 if symbology != "Code128" else 3)
    height, width = memoryview(image).shape
    Image.frombytes("L", (width, height), bytes(memoryview(image))).save(buffer, format="PNG")
    return buffer.getvalue()


def ticket_pdf(
    codes: list[str | tuple[str, str]],
    *,
    event: str = "Skyline Festival",
    per_page: int = 1,
    blank_pages: int = 0,
    user_password: str | None = None,
    print_code: bool = True,
) -> bytes:
    """A PDF with one ticket per code (``text`` or ``(text, symbology)``), ``per_page`` tickets a page,
    then ``blank_pages`` pages of text only. ``user_password`` encrypts it (opening needs the password).
    ``print_code`` prints each code's text under its barcode, as real tickets do."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(False)
    tickets = [(c, "QRCode") if isinstance(c, str) else c for c in codes]
    for start in range(0, len(tickets), per_page):
        pdf.add_page()
        pdf.set_font("helvetica", size=16)
        pdf.text(15, 20, f"{event} - Harbor Arena - 2026-12-12 20:00")
        for slot, (text, symbology) in enumerate(tickets[start : start + per_page]):
            top = 30 + slot * 85
            pdf.set_font("helvetica", size=11)
            pdf.text(15, top + 5, f"Section Lower 101 - Row A - Seat {start + slot + 1}")
            pdf.image(io.BytesIO(barcode_png(text, symbology)), x=15, y=top + 10, w=WIDTH_MM[symbology])
            if print_code:
                pdf.text(15, top + 80, text)
    for index in range(blank_pages):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.text(15, 20, f"Terms and conditions, page {index + 1}")
    if user_password is not None:
        pdf.set_encryption(owner_password=user_password + "-owner", user_password=user_password)
    return bytes(pdf.output())


def read_timing(*, pages: int = 20, rounds: int = 3) -> dict:
    """Seconds per page to read a ``pages``-page PDF of one QR ticket a page (median of ``rounds``)."""
    from orders.transfers.reading.barcodes import ticket_file_read

    data = ticket_pdf([f"BENCH-{n:06d}-{'X' * 12}" for n in range(pages)])
    per_page = []
    for _ in range(rounds):
        started = time.perf_counter()
        reading = ticket_file_read(data)
        elapsed = time.perf_counter() - started
        if not reading.ok or len(reading.barcodes) != pages:
            raise RuntimeError(
                f"the benchmark file read as {reading.verdict} with {len(reading.barcodes)} codes"
            )
        per_page.append(elapsed / pages)
    return {
        "pages": pages,
        "rounds": rounds,
        "bytes": len(data),
        "seconds_per_page": round(statistics.median(per_page), 4),
        "seconds_per_file": round(statistics.median(per_page) * pages, 4),
    }


def main() -> None:
    import django

    django.setup()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(read_timing(pages=args.pages, rounds=args.rounds), indent=2))


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    main()
