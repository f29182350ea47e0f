"""The multipart reader the Mailgun channel takes ``body-mime`` from: each value exactly the bytes posted."""

from orders.transfers.intake.providers import multipart_fields, multipart_parts

from .signed import multipart


def test_values_are_the_posted_bytes():
    value = b"Subject: x\r\n\r\nline one\r\nna\xefve latin-1 \xff byte\r\n--not-the-boundary\r\n\r\n"
    body, content_type = multipart([("recipient", b"a@b.example"), ("body-mime", value), ("empty", b"")])
    assert multipart_fields(body, content_type) == {
        "recipient": b"a@b.example",
        "body-mime": value,
        "empty": b"",
    }


def test_files_and_a_preamble():
    body = (
        b'preamble\r\n--XyZ\r\nContent-Disposition: form-data; name="attachment-1"; filename="t.pdf"\r\n'
        b"Content-Type: application/pdf\r\n\r\n%PDF-1.7\r\n\x00\x01\r\n--XyZ--\r\nepilogue"
    )
    assert multipart_parts(body, "multipart/form-data; boundary=XyZ") == [
        ("attachment-1", b"%PDF-1.7\r\n\x00\x01", "t.pdf", "application/pdf")
    ]


def test_not_multipart():
    assert multipart_fields(b"{}", "application/json") is None
