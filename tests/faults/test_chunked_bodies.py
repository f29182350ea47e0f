"""Transfer-Encoding: chunked request bodies are read (gunicorn directly, production shape): JSON and
multipart, and an endless one is 413 in the envelope once past the limit."""

import http.client
import json
from urllib.parse import urlsplit

import pytest

from orders.models import Order

from .conftest import ORDER_FORM, quote_body
from .live import production_env

pytestmark = pytest.mark.django_db(transaction=True)


def _chunked(url: str, path: str, body: bytes, content_type: str, headers: dict | None = None, piece=7):
    """POST ``body`` in chunks of ``piece`` bytes, without Content-Length."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    chunks = (body[i : i + piece] for i in range(0, len(body), piece))
    conn.request(
        "POST",
        path,
        body=chunks,
        headers={"Content-Type": content_type, **(headers or {})},
        encode_chunked=True,
    )
    response = conn.getresponse()
    status, raw = response.status, response.read()
    conn.close()
    return status, json.loads(raw)


def _multipart(fields: dict[str, str]) -> tuple[bytes, str]:
    boundary = "----chunked7MA4YWxkTrZu0gW"
    body = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
        for k, v in fields.items()
    )
    return (body + f"--{boundary}--\r\n").encode(), f"multipart/form-data; boundary={boundary}"


def test_chunked_json_and_multipart_bodies_are_read(processes, row, creds):
    url = processes.web(production_env())
    credentials = {
        "client_id": creds.client_id,
        "client_secret": creds.client_secret,
        "grant_type": "client_credentials",
    }
    status, body = _chunked(url, "/v1/auth/token", json.dumps(credentials).encode(), "application/json")
    assert status == 200, body
    auth = {"Authorization": f"Bearer {body['data']['access_token']}"}

    status, quote = _chunked(
        url, "/v1/quotes", json.dumps(quote_body(row)).encode(), "application/json", auth
    )
    assert status == 201, quote

    form, content_type = _multipart({"quote_id": quote["data"]["quote_id"], **ORDER_FORM})
    status, order = _chunked(url, "/v1/orders", form, content_type, auth, piece=50)
    assert status == 201, order
    assert Order.objects.filter(order_id=order["data"]["order_id"]).exists()

    # Form encoding, on the token endpoint that accepts it.
    status, body = _chunked(
        url,
        "/v1/auth/token",
        "&".join(f"{k}={v}" for k, v in credentials.items()).encode(),
        "application/x-www-form-urlencoded",
    )
    assert status == 200, body


def test_a_chunked_body_over_the_limit_is_413_in_the_envelope(processes, creds):
    url = processes.web(production_env())
    big = b'{"client_id": "' + b"x" * (1024 * 1024 + 10) + b'"}'
    status, body = _chunked(url, "/v1/auth/token", big, "application/json", piece=64 * 1024)
    assert status == 413, body
    assert body["error"]["code"] == "PAYLOAD_TOO_LARGE" and body["meta"]["request_id"]
