"""Ticket PDFs: the 10 MB limit while streaming, the %PDF- check, private storage, no leftover temp files."""

import gc
from datetime import timedelta

import pytest

from catalog.models import Row
from orders.models import Order
from quotes.models import Quote
from tests.conftest import assert_error
from tests.quotes.factories import quote_token, quotes_written

from .conftest import order_form, pdf_upload, post_order
from .wsgi import PeakRss, list_files, write_multipart, wsgi_post

pytestmark = pytest.mark.django_db

MB10 = 10 * 1024 * 1024
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64


@pytest.fixture
def upload_tmp(settings, tmp_path):
    """Uploads spool to their own directory, so a test can see every temporary file left behind."""
    directory = tmp_path / "upload-tmp"
    directory.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(directory)
    return directory


def pdf_fields(quote, **overrides) -> list[tuple[str, str]]:
    form = order_form(quote, **{"delivery_type": "pdf", **overrides})
    return list(form.items())


def test_pdf_one_byte_over_10_mb_is_rejected_as_too_large(
    auth_client, quote, row, tmp_path, upload_tmp, settings
):
    body = tmp_path / "body"
    write_multipart(body, pdf_fields(quote), file_size=MB10 + 1)
    response = wsgi_post("/v1/orders", body, token=auth_client.token)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "file"
    assert error["details"]["issue"] == "too_large"
    assert Order.objects.count() == 0
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is None
    row.refresh_from_db()
    assert row.available_quantity == 10
    assert list_files(upload_tmp) == []
    assert list_files(settings.MEDIA_ROOT) == []


def test_pdf_of_exactly_10_mb_is_accepted(auth_client, quote, tmp_path, upload_tmp):
    body = tmp_path / "body"
    write_multipart(body, pdf_fields(quote), file_size=MB10)
    response = wsgi_post("/v1/orders", body, token=auth_client.token)

    assert response.status_code == 201, response.content[:300]
    order = Order.objects.get()
    assert order.ticket_file.size == MB10
    with order.ticket_file.open("rb") as fh:
        assert fh.read(5) == b"%PDF-"
    assert list_files(upload_tmp) == []


def test_upload_memory_does_not_grow_with_the_file(auth_client, partner, tmp_path, upload_tmp):
    from tests.orders.factories import order_row
    from tests.quotes.factories import QuoteFactory

    row = order_row(available_quantity=10)
    quotes = [QuoteFactory(partner=partner, row=row, quantity=1) for _ in range(3)]
    over, exact, warm = tmp_path / "over", tmp_path / "exact", tmp_path / "warm"
    write_multipart(warm, pdf_fields(quotes[0]), file_size=1024)
    write_multipart(over, pdf_fields(quotes[1]), file_size=MB10 + 1)
    write_multipart(exact, pdf_fields(quotes[2]), file_size=MB10)
    # Warm up every code path once (imports, connection, caches) before measuring.
    assert wsgi_post("/v1/orders", warm, token=auth_client.token).status_code == 201
    gc.collect()

    with PeakRss() as over_rss:
        base = over_rss.peak
        response = wsgi_post("/v1/orders", over, token=auth_client.token)
    assert response.status_code == 400
    over_growth = over_rss.peak - base

    gc.collect()
    with PeakRss() as exact_rss:
        base = exact_rss.peak
        response = wsgi_post("/v1/orders", exact, token=auth_client.token)
    assert response.status_code == 201, response.content[:300]
    exact_growth = exact_rss.peak - base

    # A buffered upload would add at least the file's 10 MiB; streaming stays within a few chunks.
    print(f"RSS growth: {over_growth} bytes (10 MB + 1), {exact_growth} bytes (10 MB)")
    assert over_growth < 3 * 1024 * 1024, over_growth
    assert exact_growth < 3 * 1024 * 1024, exact_growth


def test_too_large_upload_still_reports_an_earlier_field_error_first(
    auth_client, quote, tmp_path, upload_tmp
):
    body = tmp_path / "body"
    write_multipart(body, pdf_fields(quote, delivery_type="paper"), file_size=MB10 + 1)
    error = assert_error(wsgi_post("/v1/orders", body, token=auth_client.token), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "delivery_type"


def test_too_large_upload_with_fields_after_the_file_is_too_large(auth_client, quote, tmp_path, upload_tmp):
    body = tmp_path / "body"
    fields = pdf_fields(quote)
    write_multipart(body, fields[:1], file_size=MB10 + 1, fields_after=fields[1:])
    error = assert_error(wsgi_post("/v1/orders", body, token=auth_client.token), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == ("file", "too_large")


def test_png_named_pdf_is_rejected(auth_client, quote, upload_tmp, settings):
    form = order_form(quote, delivery_type="pdf", file=pdf_upload(PNG_BYTES, name="tickets.pdf"))
    error = assert_error(post_order(auth_client, form), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == ("file", "invalid")
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is None
    assert list_files(upload_tmp) == []
    assert list_files(settings.MEDIA_ROOT) == []


def test_empty_file_is_rejected_as_not_a_pdf(auth_client, quote):
    form = order_form(quote, delivery_type="pdf", file=pdf_upload(b"", name="tickets.pdf"))
    error = assert_error(post_order(auth_client, form), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == ("file", "invalid")


def test_file_field_sent_as_text_is_validation_error(auth_client, quote):
    error = assert_error(
        post_order(auth_client, order_form(quote, delivery_type="pdf", file="%PDF-1.7")),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"]["field"] == "file"


def test_stored_pdf_is_removed_when_the_order_is_refused_after_upload(
    auth_client, quote, upload_tmp, settings
):
    Row.objects.filter(pk=quote.row_id).update(available_quantity=0)
    form = order_form(quote, delivery_type="pdf", file=pdf_upload())
    assert_error(post_order(auth_client, form), 422, "INSUFFICIENT_QUANTITY")
    assert list_files(settings.MEDIA_ROOT) == []
    assert list_files(upload_tmp) == []


def test_no_temporary_file_outlives_a_successful_upload(auth_client, quote, upload_tmp, tmp_path):
    body = tmp_path / "body"
    write_multipart(body, pdf_fields(quote), file_size=300 * 1024)
    assert wsgi_post("/v1/orders", body, token=auth_client.token).status_code == 201
    assert list_files(upload_tmp) == []


def test_other_file_parts_are_ignored_and_not_kept(auth_client, quote, tmp_path, upload_tmp, settings):
    body = tmp_path / "body"
    # A stray file part under another name is read and dropped; the order has no ticket file.
    fields = list(order_form(quote, is_ready_to_deliver="true", in_hand_date=None).items())
    write_multipart(body, fields, file_size=None)
    text = body.read_bytes().replace(
        b"--" + b"----partner-order-test-boundary-7MA4YWxkTrZu0gW--",
        b'------partner-order-test-boundary-7MA4YWxkTrZu0gW\r\nContent-Disposition: form-data; name="extra"; '
        b'filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\nabc\r\n'
        b"------partner-order-test-boundary-7MA4YWxkTrZu0gW--",
    )
    body.write_bytes(text)
    response = wsgi_post("/v1/orders", body, token=auth_client.token)
    assert response.status_code == 201, response.content
    assert Order.objects.get().has_ticket_file is False
    assert list_files(upload_tmp) == []


def test_a_valid_pdf_with_a_mobile_delivery_is_kept_too(auth_client, quote):
    form = order_form(quote, delivery_type="mobile_qr", file=pdf_upload())
    assert post_order(auth_client, form).status_code == 201
    assert Order.objects.get().has_ticket_file


def test_quote_token_in_response_matches_for_pdf_order(auth_client, quote):
    form = order_form(
        quote,
        delivery_type="pdf",
        file=pdf_upload(),
        in_hand_date=(quote.event.event_date - timedelta(days=3)).isoformat(),
    )
    data = post_order(auth_client, form).json()["data"]
    assert (
        data["quotes"][0]["quote_id"] == quote_token(quote)
        or data["quotes"][0]["quote_id"] == form["quote_id"]
    )


def test_non_file_fields_over_the_memory_limit_are_payload_too_large(auth_client, quote, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    form = order_form(quote, seller_name="x" * (1024 * 1024 + 10))
    assert_error(post_order(auth_client, form), 413, "PAYLOAD_TOO_LARGE")
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is None


def test_too_many_file_parts_is_validation_error(auth_client, quote, settings, upload_tmp):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    form = order_form(quote, delivery_type="pdf")
    form["file"] = [pdf_upload() for _ in range(5)]
    error = assert_error(post_order(auth_client, form), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == ("body", "too_many_files")
    assert list_files(upload_tmp) == []
