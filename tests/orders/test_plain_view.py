"""POST /v1/orders answers without DRF's dispatch (config/api/plain.py), exactly as its DRF view answers: every
status, header, error code, message and field path; the PDF read with the same upload handler and its temporary
file removed with the request."""

import os
from datetime import timedelta
from unittest import mock

import pytest
from django.core.handlers.base import BaseHandler
from django.http.multipartparser import MultiPartParser
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from rest_framework.test import APIClient
from rest_framework.views import APIView

from orders.models import Order
from tests.conftest import issue_token, make_partner
from tests.quotes.factories import QuoteFactory, quote_token

from .conftest import PDF_BYTES, narrow_token_client, order_form, pdf_upload

# A temporary file left for the garbage collector to close (the request did not) fails the test.
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

VOLATILE_HEADERS = {"X-Request-ID", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit", "Content-Length"}
# What differs between two orders made alike (each needs its own quote).
VOLATILE_FIELDS = ("order_id", "created_at", "transfer_address", "quotes")
# DRF's path: an Accept with an indent asks DRF's renderer, which renders indent=0 as compact JSON.
THROUGH_DRF = {"HTTP_ACCEPT": "application/json; indent=0"}


def _answer(response) -> tuple:
    headers = {name: value for name, value in response.items() if name not in VOLATILE_HEADERS}
    body = response.json()
    body.pop("meta")
    for name in VOLATILE_FIELDS:
        (body.get("data") or {}).pop(name, None)
    details = (body.get("error") or {}).get("details") or {}
    details.pop("quote_id", None)
    return response.status_code, headers, body


def _post(client, form: dict, **extra):
    for value in form.values():
        if hasattr(value, "seek"):
            value.seek(0)  # a file read by an earlier request of the pair
    return client.generic(
        "POST", "/v1/orders", encode_multipart(BOUNDARY, form), content_type=MULTIPART_CONTENT, **extra
    )


def _both(client, plain_form: dict, drf_form: dict | None = None, **extra) -> tuple[tuple, tuple]:
    plain = _post(client, plain_form, **extra)
    drf = _post(client, drf_form if drf_form is not None else plain_form, **THROUGH_DRF, **extra)
    return _answer(plain), _answer(drf)


def test_an_order_is_answered_without_drfs_dispatch_on_the_short_path(auth_client, quote):
    refuse = mock.Mock(side_effect=AssertionError("resolved by Django's handler"))
    with (
        mock.patch.object(APIView, "dispatch", side_effect=AssertionError("DRF's dispatch")),
        mock.patch.object(BaseHandler, "resolve_request", refuse),
    ):
        response = _post(auth_client, order_form(quote))
    assert response.status_code == 201, response.content
    assert response.resolver_match.url_name == "orders"
    assert response["Allow"] == "GET, POST, HEAD, OPTIONS"
    assert response["X-Request-ID"].startswith("req_")
    assert response["RateLimit-Limit"]
    assert Order.objects.get(order_id=response.json()["data"]["order_id"]).quote_id == quote.pk


def test_an_order_is_answered_as_the_drf_view_answers(auth_client, partner, row):
    def fresh(**overrides) -> tuple[dict, dict]:
        quotes = [QuoteFactory(partner=partner, row=row, quantity=2) for _ in range(2)]
        return tuple(order_form(q, **overrides) for q in quotes)

    plain, drf = _both(auth_client, *fresh())
    assert plain == drf and plain[0] == 201
    plain, drf = _both(
        auth_client,
        *fresh(
            delivery_type="pdf",
            is_ready_to_deliver="true",
            seller_email="seller@example.com",
            seller_name=" Ana ",
            partner_reference="A-1",
        ),
    )
    assert plain[0] == 400  # a PDF delivery that is ready needs its file
    with_file = [
        {**form, "file": pdf_upload()}
        for form in fresh(delivery_type="pdf", is_ready_to_deliver="true", in_hand_date=None)
    ]
    plain, drf = _both(auth_client, *with_file)
    assert plain == drf and plain[0] == 201, plain

    quote = QuoteFactory(partner=partner, row=row, quantity=2)
    good = order_form(quote)
    event_date = quote.event.event_date
    forms = [
        {k: v for k, v in good.items() if k != "quote_id"},
        {**good, "quote_id": ""},
        {**good, "quote_id": "q" * 5000},
        {**good, "quote_id": "not-a-quote"},
        {**good, "quote_id": quote_token(QuoteFactory(row=row, quantity=1))},  # another partner's
        {**good, "delivery_type": "carrier_pigeon"},
        {**good, "delivery_type": ""},
        {**good, "is_ready_to_deliver": "maybe"},
        {**good, "in_hand_date": "tomorrow"},
        {**good, "in_hand_date": "2020-01-01"},
        {**good, "in_hand_date": (event_date - timedelta(days=1)).isoformat()},
        {**good, "in_hand_date": (event_date + timedelta(days=1)).isoformat()},
        {**good, "seller_email": "not-an-address"},
        {**good, "partner_reference": "r" * 500},
        {**good, "file": pdf_upload(b"not a pdf")},
        {**good, "delivery_type": "pdf", "is_ready_to_deliver": "true", "file": pdf_upload(b"")},
        {**good, "extra": "ignored", "quote_id": "not-a-quote"},
        {},
    ]
    for form in forms:
        plain, drf = _both(auth_client, form)
        assert plain == drf, form
        assert plain[0] >= 400, (form, plain)

    anonymous = APIClient()
    for extra in ({"HTTP_AUTHORIZATION": "Bearer nope"}, {"HTTP_AUTHORIZATION": "Basic x"}):
        plain, drf = _both(anonymous, good, **extra)
        assert plain == drf, extra
        assert plain[0] == 401


def test_the_usual_form_is_read_in_one_pass_and_any_other_by_djangos_parser(auth_client, partner, row):
    """A small form of text fields as clients send it is read without Django's multipart parser
    (config.api.multipart); a form in another shape is read by that parser, and answered as DRF answers it."""
    quote = QuoteFactory(partner=partner, row=row, quantity=2)
    with mock.patch.object(MultiPartParser, "parse", side_effect=AssertionError("Django's parser")):
        response = _post(auth_client, order_form(quote))
    assert response.status_code == 201, response.content

    quoted = f'multipart/form-data; boundary="{BOUNDARY}"'
    answers = []
    for extra in ({}, THROUGH_DRF):
        form = order_form(QuoteFactory(partner=partner, row=row, quantity=2))
        with mock.patch.object(
            MultiPartParser, "parse", autospec=True, side_effect=MultiPartParser.parse
        ) as read:
            response = auth_client.generic(
                "POST", "/v1/orders", encode_multipart(BOUNDARY, form), content_type=quoted, **extra
            )
        assert read.called
        answers.append(_answer(response))
    assert answers[0] == answers[1] and answers[0][0] == 201, answers


def test_a_token_without_the_scope_or_the_payout_set_up_is_refused_as_drf_refuses_it(partner, quote, row):
    plain, drf = _both(narrow_token_client(partner, "events:read quotes:write"), order_form(quote))
    assert plain == drf and plain[0] == 403 and plain[2]["error"]["code"] == "FORBIDDEN"

    unpaid = APIClient()
    creds = make_partner(name="No payout", payment_methods=False)
    unpaid.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(unpaid, creds)}")
    form = order_form(QuoteFactory(partner=creds.partner, row=row, quantity=1))
    plain, drf = _both(unpaid, form)
    assert plain == drf and plain[0] == 403
    assert plain[2]["error"]["code"] == "PAYOUT_METHOD_NOT_CONFIGURED"


def test_a_malformed_form_and_too_many_files_are_refused_as_drf_refuses_them(auth_client, quote, settings):
    broken = b"--" + BOUNDARY.encode() + b"\r\nContent-Disposition: form-data; name=\r\n"
    answers = [
        _answer(auth_client.generic("POST", "/v1/orders", broken, content_type=MULTIPART_CONTENT, **extra))
        for extra in ({}, THROUGH_DRF)
    ]
    assert answers[0] == answers[1] and answers[0][0] == 400
    for content_type in (
        "multipart/form-data",
        "multipart/form-data; boundary=",
        "Multipart/Form-Data; boundary=x",
    ):
        answers = [
            _answer(auth_client.generic("POST", "/v1/orders", broken, content_type=content_type, **extra))
            for extra in ({}, THROUGH_DRF)
        ]
        assert answers[0] == answers[1] and answers[0][0] == 400, (content_type, answers[0])
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 1
    form = {**order_form(quote), "file": pdf_upload(), "other": pdf_upload(name="b.pdf")}
    plain, drf = _both(auth_client, form)
    assert plain == drf and plain[0] == 400
    assert plain[2]["error"]["details"]["issue"] == "too_many_files"


def test_a_pdf_over_the_limit_is_cut_off_and_every_temporary_file_removed(
    auth_client, quote, settings, tmp_path
):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(uploads)
    settings.ORDER_PDF_MAX_BYTES = 64 * 1024
    too_big = {**order_form(quote), "file": pdf_upload(PDF_BYTES + b"0" * (200 * 1024))}
    plain, drf = _both(auth_client, too_big)
    assert plain == drf and plain[0] == 400
    assert plain[2]["error"]["details"]["issue"] == "too_large"
    response = _post(auth_client, {**order_form(quote), "file": pdf_upload()})
    assert response.status_code == 201, response.content
    assert Order.objects.get(order_id=response.json()["data"]["order_id"]).ticket_file
    assert not os.listdir(uploads)


def test_an_idempotency_key_and_a_body_in_another_type_take_drfs_path(auth_client, quote):
    first = _post(auth_client, order_form(quote), HTTP_IDEMPOTENCY_KEY="o-1")
    again = _post(auth_client, order_form(quote), HTTP_IDEMPOTENCY_KEY="o-1")
    assert first.status_code == again.status_code == 201, first.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
    response = auth_client.post("/v1/orders", order_form(quote), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issue"] == "unsupported_media_type"
