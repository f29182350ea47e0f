"""config.api.multipart reads a small form of text fields as Django's multipart parser reads it, or declines it:
compared with Django's parser over generated forms in many shapes and over bodies mutated byte by byte."""

import io
import random

import pytest
from django.core.files.uploadhandler import MemoryFileUploadHandler
from django.http.multipartparser import MultiPartParser
from django.test import RequestFactory

from config.api import multipart

BOUNDARY_CHARS = "abcXYZ019_.-"
ODD_BOUNDARY_CHARS = " \"'=;:/+()?é"
NAME_CHARS = "abcqXYZ_0189"
ODD_NAMES = ["", "a b", " name", 'na"me', "é", "n" * 65, "name;x", "a\\b", "filename"]
VALUE_CHARS = "abc XYZ 019 -_.:;,\"'=\\/!?%&*()[]{}<>|~`@#$^+"
ODD_VALUE_PIECES = ["\r", "\n", "\r\n", "é", "\x00", "\t", "\x7f", "--", "\r\n--", "\r\n\r\n"]
BYTES_OF_NOTE = b'\r\n-"; =:\x00\xc3'


def django_fields(content_type: str, body: bytes):
    meta = {"CONTENT_TYPE": content_type, "CONTENT_LENGTH": str(len(body))}
    handlers = [MemoryFileUploadHandler()]
    return MultiPartParser(meta, io.BytesIO(body), handlers, "utf-8").parse()


def _text(rng: random.Random, chars: str, most: int) -> str:
    return "".join(rng.choice(chars) for _ in range(rng.randint(0, most)))


def _boundary(rng: random.Random) -> str:
    chars = BOUNDARY_CHARS + (ODD_BOUNDARY_CHARS if rng.random() < 0.1 else "")
    return "".join(rng.choice(chars) for _ in range(rng.choice([1, 2, 8, 16, 24, 30, 40, 70, 70, 71])))


def _content_type(rng: random.Random, boundary: str) -> str:
    return rng.choice(
        [f"multipart/form-data; boundary={boundary}"] * 24
        + [
            f'multipart/form-data; boundary="{boundary}"',
            f"Multipart/Form-Data; boundary={boundary}",
            f"multipart/form-data;boundary={boundary}",
            f"multipart/form-data; boundary={boundary}; charset=utf-8",
            f"multipart/form-data; BOUNDARY={boundary}",
            f"multipart/mixed; boundary={boundary}",
        ]
    )


def _form(rng: random.Random, boundary: str) -> bytes:
    count = rng.choice([0, 1, 1, 2, 3, 3, 5, 8, 33])
    parts = [b""] if rng.random() < 0.95 else [_text(rng, "ab\r\n", 6).encode()]  # a preamble, now and then
    for _ in range(count):
        name = rng.choice(ODD_NAMES) if rng.random() < 0.03 else _text(rng, NAME_CHARS, 12) or "x"
        value = _text(rng, VALUE_CHARS, 40)
        if rng.random() < 0.03:
            at = rng.randint(0, len(value))
            value = value[:at] + rng.choice([*ODD_VALUE_PIECES, "--" + boundary]) + value[at:]
        head = f'Content-Disposition: form-data; name="{name}"'
        if rng.random() < 0.02:
            head += rng.choice(['; filename="t.txt"', "\r\nContent-Type: text/plain", "; filename="])
        eol = "\r\n" if rng.random() < 0.99 else "\n"
        parts.append(f"{eol}{head}{eol}{eol}{value}{eol}".encode())
    closing = rng.choice(
        [b"--\r\n"] * 24 + [b"--"] * 4 + [b"--", b"--\r\n\r\n", b"--\r\nepilogue", b"\r\n", b""]
    )
    delimiter = b"--" + boundary.encode("utf-8")
    return parts[0] + b"".join(delimiter + part for part in parts[1:]) + delimiter + closing


def _mutate(rng: random.Random, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(data))
        kind = rng.random()
        if kind < 0.35 and at < len(data):
            del data[at]
        elif kind < 0.7:
            data[at:at] = bytes([rng.choice(BYTES_OF_NOTE)])
        elif at < len(data):
            data[at] = rng.randint(0, 255)
    return bytes(data)


def _compare(content_type: str, body: bytes) -> bool:
    """True when the fast reading took the body; then Django's parser gives the same fields."""
    fast = multipart.text_fields(content_type, body)
    if fast is None:
        return False
    post, files = django_fields(content_type, body)
    assert list(fast.lists()) == list(post.lists()), (content_type, body)
    assert not files and not fast._mutable and not post._mutable
    assert fast.encoding == post.encoding
    return True


def test_generated_and_mutated_forms_read_as_djangos_parser_reads_them():
    rng = random.Random(20261201)
    taken = {"generated": 0, "mutated": 0}
    cases = 6000
    for _ in range(cases):
        boundary = _boundary(rng)
        content_type = _content_type(rng, boundary)
        body = _form(rng, boundary)
        taken["generated"] += _compare(content_type, body)
        taken["mutated"] += _compare(content_type, _mutate(rng, body))
    # Both kinds of body are taken often enough for the comparison to mean something, and not always.
    assert cases * 0.25 < taken["generated"] < cases * 0.9, taken
    assert cases * 0.01 < taken["mutated"] < taken["generated"], taken


def test_the_usual_forms_are_taken():
    for boundary in (
        "BoUnDaRyStRiNg",
        "----benchboundary7MA4YWxkTrZu0gW",
        "0f3a9c1e" * 4,
        "------------------------d74496d66958873e",
    ):
        body = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="quote_id"\r\n\r\nqte_abc\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="delivery_type"\r\n\r\nmobile_transfer\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="quote_id"\r\n\r\n\r\n'
            f"--{boundary}--\r\n"
        ).encode()
        fields = multipart.text_fields(f"multipart/form-data; boundary={boundary}", body)
        assert fields is not None
        assert fields.getlist("quote_id") == ["qte_abc", ""] and fields["delivery_type"] == "mobile_transfer"
        assert _compare(f"multipart/form-data; boundary={boundary}", body)


def _fields(count: int, value: str = "v") -> tuple[str, bytes]:
    parts = "".join(
        f'--b\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\n{value}\r\n' for i in range(count)
    )
    return "multipart/form-data; boundary=b", f"{parts}--b--\r\n".encode()


def test_djangos_limits_and_errors_apply_past_them(settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    assert multipart.text_fields(*_fields(3)) is not None
    content_type, body = _fields(4)
    assert multipart.text_fields(content_type, body) is None
    with pytest.raises(Exception, match="DATA_UPLOAD_MAX_NUMBER_FIELDS"):
        django_fields(content_type, body)

    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    content_type, body = _fields(2, "x" * 60)
    assert len(body) > 100 and multipart.text_fields(content_type, body) is None
    with pytest.raises(Exception, match="DATA_UPLOAD_MAX_MEMORY_SIZE"):
        django_fields(content_type, body)

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
    content_type, body = _fields(multipart.MAX_FIELDS + 1)
    assert multipart.text_fields(content_type, body) is None  # many fields: Django's parser
    content_type, body = _fields(2, "x" * multipart.MAX_BYTES)
    assert multipart.text_fields(content_type, body) is None  # a large body: Django's parser


def test_a_large_body_is_left_unread_for_djangos_parser_to_stream():
    content_type, body = _fields(2, "x" * multipart.MAX_BYTES)
    request = RequestFactory().generic("POST", "/v1/orders", body, content_type=content_type)
    assert multipart.request_text_fields(request) is None
    assert not request._read_started

    content_type, body = _fields(2)
    request = RequestFactory().generic("POST", "/v1/orders", body, content_type=content_type)
    assert multipart.request_text_fields(request).dict() == {"f0": "v", "f1": "v"}
