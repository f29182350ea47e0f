"""The order form read in one pass (orders/uploads.py ``OrderFormParser``): the same fields as Django's multipart
parser for every body, and Django's parser left alone for the usual form of text fields."""

import io

import pytest
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import QueryDict
from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.test import RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from rest_framework.request import Request

from orders.uploads import FORM_IN_ONE_PASS_MAX_BYTES, OrderFormParser, TicketPdfUploadHandler

from .conftest import PDF_BYTES

FIELDS = {"quote_id": "qt_" + "x" * 120, "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}


def _part(name: str, value: bytes, headers: bytes = b"") -> bytes:
    return (
        b'--B\r\nContent-Disposition: form-data; name="'
        + name.encode()
        + b'"\r\n'
        + headers
        + b"\r\n"
        + value
    )


def _body(*parts: bytes, end: bytes = b"\r\n--B--\r\n") -> bytes:
    return b"\r\n".join(parts) + end


BODIES = {
    "the usual form": (encode_multipart(BOUNDARY, FIELDS), MULTIPART_CONTENT),
    "a repeated field, empty values, CRLF and UTF-8 inside": (
        _body(
            _part("a", b"1"),
            _part("a", b""),
            _part("note", "zwei\r\n\r\nzeilen é€".encode()),
            _part("b", b""),
        ),
        "multipart/form-data; boundary=B",
    ),
    "invalid UTF-8 is replaced": (_body(_part("a", b"\xff\xfeok")), "multipart/form-data; boundary=B"),
    "no CRLF after the closing boundary": (
        _body(_part("a", b"1"), end=b"\r\n--B--"),
        "multipart/form-data; boundary=B",
    ),
    "a value holding the boundary": (_body(_part("a", b"x--By")), "multipart/form-data; boundary=B"),
    "a value ending in LF": (_body(_part("a", b"x\n")), "multipart/form-data; boundary=B"),
    "a bare LF before a boundary": (
        b'--B\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\n--B--\r\n',
        "multipart/form-data; boundary=B",
    ),
    "a part with its own content type": (
        _body(_part("a", b"1", b"Content-Type: text/plain; charset=utf-8\r\n")),
        "multipart/form-data; boundary=B",
    ),
    "a file": (
        encode_multipart(BOUNDARY, {**FIELDS, "file": io.BytesIO(PDF_BYTES)}),
        MULTIPART_CONTENT,
    ),
    "a quoted boundary": (_body(_part("a", b"1")), 'multipart/form-data; boundary="B"'),
    "a charset": (
        _body(_part("a", "é".encode("latin-1"))),
        "multipart/form-data; boundary=B; charset=latin-1",
    ),
    "a preamble and an epilogue": (
        b"preamble\r\n" + _body(_part("a", b"1"), end=b"\r\n--B--\r\nepilogue"),
        "multipart/form-data; boundary=B",
    ),
    "lower-case header, unquoted name": (
        b"--B\r\ncontent-disposition: form-data; name=a\r\n\r\n1\r\n--B--\r\n",
        "multipart/form-data; boundary=B",
    ),
    "a part without headers": (b"--B\r\n\r\n1\r\n--B--\r\n", "multipart/form-data; boundary=B"),
    "a header without its blank line": (
        b'--B\r\nContent-Disposition: form-data; name="a"\r\n--B--\r\n',
        "multipart/form-data; boundary=B",
    ),
    "no closing boundary": (_body(_part("a", b"1"), end=b"\r\n"), "multipart/form-data; boundary=B"),
}


def _request(body: bytes, content_type: str) -> Request:
    django_request = RequestFactory().generic("POST", "/v1/orders", body, content_type=content_type)
    django_request.upload_handlers = [TicketPdfUploadHandler(django_request, max_bytes=10 * 1024 * 1024)]
    return Request(django_request, parsers=[OrderFormParser()])


def _django(body: bytes, content_type: str) -> tuple[QueryDict, list[str]]:
    request = _request(body, content_type)
    meta = {**request.META, "CONTENT_TYPE": content_type}
    encoding = request.parser_context["encoding"]
    data, files = DjangoMultiPartParser(meta, io.BytesIO(body), request.upload_handlers, encoding).parse()
    return data, sorted(files)


@pytest.mark.parametrize("body, content_type", BODIES.values(), ids=BODIES.keys())
def test_the_form_is_what_djangos_parser_reads(body, content_type):
    request = _request(body, content_type)
    expected, expected_files = _django(body, content_type)

    assert list(request.POST.lists()) == list(expected.lists())
    assert sorted(request.FILES) == expected_files
    assert request.POST._mutable is False


@pytest.mark.parametrize(
    "body",
    [
        encode_multipart(BOUNDARY, FIELDS),
        _body(_part("a", b"1"), _part("a", b"2"), _part("note", "é".encode())),
        _body(_part("a", b"1"), end=b"\r\n--B--"),
    ],
    ids=["the usual form", "repeated and UTF-8", "no final CRLF"],
)
def test_a_form_of_text_fields_never_reaches_djangos_parser(monkeypatch, body):
    def refused(self):
        raise AssertionError("Django's multipart parser ran")

    content_type = MULTIPART_CONTENT if BOUNDARY.encode() in body else "multipart/form-data; boundary=B"
    expected, _ = _django(body, content_type)
    monkeypatch.setattr(DjangoMultiPartParser, "parse", refused)

    assert list(_request(body, content_type).data.lists()) == list(expected.lists())


def test_a_larger_body_and_one_past_djangos_limits_go_to_djangos_parser(settings):
    large = _body(_part("a", b"x" * FORM_IN_ONE_PASS_MAX_BYTES))
    assert list(_request(large, "multipart/form-data; boundary=B").data.lists()) == [
        ("a", ["x" * FORM_IN_ONE_PASS_MAX_BYTES])
    ]

    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 1
    with pytest.raises(TooManyFieldsSent):
        _request(_body(_part("a", b"1"), _part("b", b"2")), "multipart/form-data; boundary=B").data
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    with pytest.raises(RequestDataTooBig):
        _request(_body(_part("a", b"x" * 20)), "multipart/form-data; boundary=B").data
