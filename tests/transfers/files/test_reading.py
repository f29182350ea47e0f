"""Reading a ticket file: every symbology, images, and every way a file cannot be read (a verdict, never an
exception): encrypted, damaged, too many pages, too large, too slow, not a PDF or an image."""

import io

import pytest
from PIL import Image

from bench.ticket_files import barcode_png, ticket_pdf
from orders.transfers.reading import barcodes
from orders.transfers.reading.barcodes import ticket_file_read

from .helpers import codes


@pytest.mark.parametrize("symbology", ["QRCode", "PDF417", "Aztec", "DataMatrix", "Code128"])
def test_every_symbology_is_read_with_its_page_and_the_page_text(symbology):
    texts = [f"SKY-2026-{symbology.upper()}-{n:06d}" for n in (104729, 1299709, 15485863)]
    data = ticket_pdf([(t, symbology) for t in texts], per_page=2)

    reading = ticket_file_read(data)

    assert reading.verdict == "ok" and reading.kind == "pdf"
    assert (reading.pages, reading.page_count) == (2, 2)
    assert sorted(b.text for b in reading.barcodes) == sorted(texts)
    assert {b.symbology for b in reading.barcodes} == {symbology}
    assert sorted(b.page for b in reading.barcodes) == [1, 1, 2]
    assert "Skyline Festival" in reading.text[0] and "Seat 3" in reading.text[1]


def test_a_page_without_a_barcode_is_read_for_its_text_only():
    reading = ticket_file_read(ticket_pdf([], blank_pages=2))
    assert reading.verdict == "ok" and reading.pages == 2 and reading.barcodes == []
    assert "Terms and conditions" in reading.text[1]


def test_a_barcode_never_shows_in_its_repr():
    (text,) = codes(1)
    (barcode,) = ticket_file_read(ticket_pdf([text])).barcodes
    assert text not in repr(barcode) and text[:-4] not in repr(barcode)
    assert barcode.last4 == text[-4:] and barcode.last4 in repr(barcode)


def test_a_password_protected_pdf_is_reported_encrypted():
    reading = ticket_file_read(ticket_pdf(codes(2), user_password="s3cret"))
    assert reading.verdict == "encrypted" and reading.barcodes == [] and not reading.ok


def test_a_pdf_with_only_an_owner_password_opens_and_is_read():
    # Most real ticket PDFs restrict printing or copying only: no password is needed to open them.
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.image(io.BytesIO(barcode_png("OWNER-ONLY-0001")), x=10, y=10, w=50)
    pdf.set_encryption(owner_password="owner")
    reading = ticket_file_read(bytes(pdf.output()))
    assert reading.verdict == "ok" and [b.text for b in reading.barcodes] == ["OWNER-ONLY-0001"]


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n",
        b"%PDF-1.4\n" + b"\x00\xff" * 500,
    ],
    ids=["no pages", "garbage"],
)
def test_a_damaged_pdf_is_reported_corrupt(data):
    reading = ticket_file_read(data)
    assert reading.verdict == "corrupt" and reading.pages == 0


def test_a_truncated_pdf_is_corrupt_or_read_without_barcodes_never_an_exception():
    data = ticket_pdf(codes(2))
    reading = ticket_file_read(data[: len(data) // 2])
    assert reading.verdict in ("corrupt", "ok")
    assert len(reading.barcodes) < 2


def test_twenty_pages_are_read_and_twenty_one_are_refused_unread():
    assert ticket_file_read(ticket_pdf(codes(20))).pages == 20
    reading = ticket_file_read(ticket_pdf(codes(1), blank_pages=20))
    assert reading.verdict == "too_many_pages" and reading.page_count == 21 and reading.pages == 0


def test_a_file_over_the_upload_limit_is_refused_unread(settings):
    data = ticket_pdf(codes(1))
    settings.ORDER_PDF_MAX_BYTES = len(data) - 1
    assert ticket_file_read(data).verdict == "too_large"
    settings.ORDER_PDF_MAX_BYTES = len(data)
    assert ticket_file_read(data).verdict == "ok"


def test_decoding_stops_once_the_time_budget_is_spent(monkeypatch):
    monkeypatch.setattr(barcodes, "MAX_DECODE_SECONDS", 0.0)
    reading = ticket_file_read(ticket_pdf(codes(3)))
    assert reading.verdict == "too_slow" and reading.pages < 3 and reading.page_count == 3


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_an_image_attachment_is_read(fmt):
    texts = codes(2)
    sheet = Image.new("RGB", (900, 500), "white")
    for index, text in enumerate(texts):
        sheet.paste(Image.open(io.BytesIO(barcode_png(text))).convert("RGB"), (20 + index * 450, 40))
    buffer = io.BytesIO()
    sheet.save(buffer, format=fmt, quality=90)

    reading = ticket_file_read(buffer.getvalue())

    assert reading.verdict == "ok" and reading.kind == "image"
    assert sorted(b.text for b in reading.barcodes) == sorted(texts)


def test_a_qr_code_on_a_transparent_background_is_read():
    (text,) = codes(1)
    qr = Image.open(io.BytesIO(barcode_png(text))).convert("L")
    transparent = Image.new("RGBA", qr.size, (0, 0, 0, 0))
    transparent.putalpha(qr.point(lambda v: 255 - v))  # black modules, transparent elsewhere
    buffer = io.BytesIO()
    transparent.save(buffer, format="PNG")
    assert [b.text for b in ticket_file_read(buffer.getvalue()).barcodes] == [text]


@pytest.mark.parametrize(
    "data,verdict",
    [
        (b"", "empty"),
        (b"hello, these are my tickets", "unsupported"),
        (b"\x89PNG\r\n\x1a\nbroken", "corrupt"),
    ],
)
def test_what_is_neither_a_pdf_nor_an_image_is_reported(data, verdict):
    assert ticket_file_read(data).verdict == verdict
