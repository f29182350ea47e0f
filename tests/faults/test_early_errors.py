"""Answers given before the application runs are the envelope too (docs/partners/conventions.md "Answers that are
not JSON"): an over-long request line, too many headers or one too large, a malformed method, sent to a real
gunicorn (config/deploy/gunicorn_conf.py) and to the production shape's nginx in front of it."""

from __future__ import annotations

import json
import socket

from .live import production_env


def raw(base_url: str, head: str) -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` (a request line and headers, no body) as is; the status, headers and body of the answer."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode("latin-1"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    top, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def envelope(status: int, headers: dict[str, str], body: bytes) -> dict:
    assert headers["content-type"].startswith("application/json"), (status, headers, body)
    document = json.loads(body)
    assert document["success"] is False
    assert document["meta"]["request_id"] == headers["x-request-id"]
    assert document["meta"]["request_id"].startswith("req_")
    assert document["meta"]["timestamp"].endswith("Z")
    return document["error"]


LONG_LINE = f"GET /v1/events?q={'a' * 5000} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
MANY_HEADERS = (
    "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    + "".join(f"X-Extra-{n}: {n}\r\n" for n in range(120))
    + "\r\n"
)
BIG_HEADER = f"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Big: {'b' * 9000}\r\n\r\n"
BAD_METHOD = "G@T /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
UNKNOWN_METHOD = "BREW /v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"

# What each shape answers: status, code, details.
GUNICORN = {
    "long request line": (LONG_LINE, 400, "VALIDATION_ERROR", {"field": "request_line", "issue": "too_large"}),
    "too many headers": (MANY_HEADERS, 431, "REQUEST_HEADERS_TOO_LARGE", {"field": "headers", "issue": "too_many_fields"}),
    "a header too large": (BIG_HEADER, 431, "REQUEST_HEADERS_TOO_LARGE", {"field": "headers", "issue": "too_large"}),
    "malformed method": (BAD_METHOD, 400, "VALIDATION_ERROR", {"field": "method", "issue": "invalid"}),
    "unknown method": (UNKNOWN_METHOD, 405, "METHOD_NOT_ALLOWED", None),
}  # fmt: skip
NGINX = {
    **GUNICORN,  # what nginx passes on, gunicorn answers
    "a header too large": (
        BIG_HEADER,
        431,
        "REQUEST_HEADERS_TOO_LARGE",
        {"field": "headers", "issue": "too_large"},
    ),
    "request line over nginx's buffer": (
        LONG_LINE.replace("a" * 5000, "a" * 9000),
        400,
        "VALIDATION_ERROR",
        {"field": "request_line", "issue": "too_large"},
    ),
    "malformed method": (BAD_METHOD, 400, "VALIDATION_ERROR", {"field": "request", "issue": "invalid"}),
    "malformed request line": (
        "GET /v1/events HTTP/9\r\n\r\n",
        400,
        "VALIDATION_ERROR",
        {"field": "request", "issue": "invalid"},
    ),
    # nginx refuses TRACE itself; it is passed on to the service, which answers as for any method a path does
    # not take.
    "TRACE": (UNKNOWN_METHOD.replace("BREW", "TRACE"), 405, "METHOD_NOT_ALLOWED", None),
    "unsupported transfer coding": (
        "POST /v1/quotes HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: gzip\r\n\r\n",
        501,
        "UNSUPPORTED_TRANSFER_CODING",
        {"field": "Transfer-Encoding", "issue": "invalid"},
    ),
}


def check(base_url: str, cases: dict) -> dict[str, tuple]:
    seen = {}
    for name, (head, _status, _code, _details) in cases.items():
        status, headers, body = raw(base_url, head)
        assert headers.get("content-type", "").startswith("application/json"), (name, status, headers, body)
        error = envelope(status, headers, body)
        seen[name] = (status, error["code"], error.get("details"))
    return seen


def test_gunicorns_own_refusals_are_the_envelope(processes, transactional_db):
    url = processes.web(production_env())
    expected = {name: case[1:] for name, case in GUNICORN.items()}
    assert check(url, GUNICORN) == expected


def test_nginx_and_gunicorn_refusals_behind_nginx_are_the_envelope(processes, transactional_db):
    url = processes.proxied_web(production_env())
    expected = {name: case[1:] for name, case in NGINX.items()}
    assert check(url, NGINX) == expected
