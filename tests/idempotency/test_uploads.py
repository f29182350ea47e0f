"""Idempotency-Key on the multipart POST /v1/orders: the fingerprint holds the SHA-256 of each file part,
computed while the upload streams (the file is never held in memory, even with a key)."""

import gc

import pytest

from orders.models import Order
from partners.idempotency.models import IdempotencyKey
from tests.conftest import assert_error
from tests.orders.factories import order_row
from tests.orders.wsgi import PeakRss, list_files, write_multipart, wsgi_post
from tests.quotes.factories import QuoteFactory

from .conftest import REPLAYED, assert_replay_of, order_form, pdf_upload, post_order_keyed

pytestmark = pytest.mark.django_db

MB10 = 10 * 1024 * 1024
PDF_A = b"%PDF-1.7\n% tickets for row F, seats 1-2\n%%EOF\n"
PDF_B = b"%PDF-1.7\n% tickets for row F, seats 3-4\n%%EOF\n"


@pytest.fixture
def upload_tmp(settings, tmp_path):
    directory = tmp_path / "upload-tmp"
    directory.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(directory)
    return directory


def _pdf_form(quote, content: bytes, name: str = "tickets.pdf") -> dict:
    return order_form(quote, delivery_type="pdf", is_ready_to_deliver="true", in_hand_date=None) | {
        "file": pdf_upload(content, name)
    }


def test_pdf_order_replay_with_the_same_file(auth_client, quote):
    first = post_order_keyed(auth_client, _pdf_form(quote, PDF_A), "pdf-1")
    # The file's name is not part of the request's meaning; its bytes are.
    replay = post_order_keyed(auth_client, _pdf_form(quote, PDF_A, name="renamed.pdf"), "pdf-1")

    assert first.status_code == 201, first.content
    assert_replay_of(first, replay)
    assert Order.objects.count() == 1


def test_pdf_order_with_another_file_under_the_same_key_is_a_mismatch(auth_client, quote):
    first = post_order_keyed(auth_client, _pdf_form(quote, PDF_A), "pdf-2")
    other = post_order_keyed(auth_client, _pdf_form(quote, PDF_B), "pdf-2")

    assert first.status_code == 201, first.content
    assert_error(other, 422, "IDEMPOTENCY_KEY_MISMATCH")
    assert other.headers.get(REPLAYED) is None
    assert Order.objects.count() == 1


def test_a_file_added_under_another_field_name_changes_the_fingerprint(auth_client, quote):
    form = _pdf_form(quote, PDF_A)
    assert post_order_keyed(auth_client, form, "pdf-3").status_code == 201
    extra = _pdf_form(quote, PDF_A) | {"attachment": pdf_upload(PDF_B, "note.pdf")}
    assert_error(post_order_keyed(auth_client, extra, "pdf-3"), 422, "IDEMPOTENCY_KEY_MISMATCH")


def test_a_10_mb_pdf_with_a_key_streams_and_replays_without_growing_memory(
    auth_client, partner, tmp_path, upload_tmp
):
    row = order_row(available_quantity=10)
    warm_quote, quote = (QuoteFactory(partner=partner, row=row, quantity=1) for _ in range(2))
    fields = lambda q: list(order_form(q, delivery_type="pdf").items())  # noqa: E731
    warm, exact = tmp_path / "warm", tmp_path / "exact"
    write_multipart(warm, fields(warm_quote), file_size=1024)
    write_multipart(exact, fields(quote), file_size=MB10)
    key = {"HTTP_IDEMPOTENCY_KEY": "ten-megabytes"}
    assert (
        wsgi_post(
            "/v1/orders", warm, token=auth_client.token, headers={"HTTP_IDEMPOTENCY_KEY": "w"}
        ).status_code
        == 201
    )
    gc.collect()

    with PeakRss() as rss:
        base = rss.peak
        first = wsgi_post("/v1/orders", exact, token=auth_client.token, headers=key)
        growth = rss.peak - base
    replay = wsgi_post("/v1/orders", exact, token=auth_client.token, headers=key)

    assert first.status_code == 201, first.content[:300]
    assert replay.status_code == 201
    assert replay.json()["data"] == first.json()["data"]
    assert Order.objects.filter(quote=quote).count() == 1
    print(f"RSS growth with a key: {growth} bytes (10 MB)")
    assert growth < 3 * 1024 * 1024, growth  # a second copy of the file would add 10 MiB
    assert list_files(upload_tmp) == []


def test_a_pdf_over_10_mb_with_a_key_is_400_and_frees_the_key(auth_client, quote, tmp_path, upload_tmp):
    over, fine = tmp_path / "over", tmp_path / "fine"
    write_multipart(over, list(order_form(quote, delivery_type="pdf").items()), file_size=MB10 + 1)
    write_multipart(fine, list(order_form(quote, delivery_type="pdf").items()), file_size=2048)
    key = {"HTTP_IDEMPOTENCY_KEY": "too-big"}

    error = assert_error(
        wsgi_post("/v1/orders", over, token=auth_client.token, headers=key), 400, "VALIDATION_ERROR"
    )
    assert (error["details"]["field"], error["details"]["issue"]) == ("file", "too_large")
    assert not IdempotencyKey.objects.exists()
    assert list_files(upload_tmp) == []

    corrected = wsgi_post("/v1/orders", fine, token=auth_client.token, headers=key)
    assert corrected.status_code == 201, corrected.content[:300]


def test_too_many_file_parts_with_a_key_is_the_same_400(auth_client, quote, settings, upload_tmp):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    form = order_form(quote, delivery_type="pdf")
    form["file"] = [pdf_upload() for _ in range(5)]
    error = assert_error(post_order_keyed(auth_client, form, "many"), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == ("body", "too_many_files")
    assert not IdempotencyKey.objects.exists()
    assert list_files(upload_tmp) == []


def test_a_json_body_on_the_multipart_endpoint_with_a_key_is_the_same_400(auth_client, quote):
    response = auth_client.post("/v1/orders", order_form(quote), format="json", HTTP_IDEMPOTENCY_KEY="json")
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == ("body", "unsupported_media_type")
    assert not IdempotencyKey.objects.exists()
