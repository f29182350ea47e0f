"""The production shape (DJANGO_ENV=production, collectstatic, gunicorn) sends the browser security
headers on the portal and the API: HSTS over HTTPS, nosniff, a referrer policy and a frame policy; and
header abuse past gunicorn's limits is refused before the application runs."""

import socket
import subprocess
import sys

import pytest

from tests.faults.live import ROOT, Processes, http, production_env

HTTPS = {"X-Forwarded-Proto": "https"}  # what the TLS-terminating proxy in front of gunicorn sends


@pytest.fixture(scope="module")
def production_url(django_db_setup, tmp_path_factory):
    """One server for the module: it only reads the test database's tables, never the tests' data."""
    tmp_path = tmp_path_factory.mktemp("production-shape")
    # DJANGO_ENV=production redirects plain HTTP to HTTPS (SECURE_SSL_REDIRECT defaults to on there).
    env = production_env(STATIC_ROOT=str(tmp_path / "static"), MEDIA_ROOT=str(tmp_path / "media"))
    env.pop("SECURE_SSL_REDIRECT")
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    processes = Processes(tmp_path)
    try:
        yield processes.web(env)
    finally:
        processes.stop_all()


def _assert_browser_headers(reply, where: str) -> None:
    headers = {k.lower(): v for k, v in reply.headers.items()}
    hsts = headers.get("strict-transport-security", "")
    assert "max-age=31536000" in hsts and "includeSubDomains" in hsts, (where, hsts)
    assert headers.get("x-content-type-options") == "nosniff", where
    assert headers.get("referrer-policy") in (
        "same-origin",
        "strict-origin-when-cross-origin",
        "no-referrer",
    ), where
    assert headers.get("x-frame-options") == "DENY", where


@pytest.mark.parametrize("path", ["/portal/login", "/portal/password-reset"])
def test_portal_pages_send_security_headers(production_url, path):
    reply = http("GET", production_url + path, headers=HTTPS)
    assert reply.status == 200, (path, reply.status)
    _assert_browser_headers(reply, path)
    headers = {k.lower(): v for k, v in reply.headers.items()}
    assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), path
    cookie = headers.get("set-cookie", "")
    assert "csrftoken=" in cookie and "Secure" in cookie, cookie


def test_portal_redirects_to_sign_in_with_the_same_headers(production_url):
    reply = http("GET", production_url + "/portal/orders", headers=HTTPS)
    assert reply.status == 302 and "/portal/login" in reply.headers["Location"]
    _assert_browser_headers(reply, "/portal/orders")


def test_plain_http_is_redirected_to_https(production_url):
    reply = http("GET", production_url + "/portal/login")
    assert reply.status == 301
    assert reply.headers["Location"].startswith("https://127.0.0.1")


def test_api_answers_carry_the_same_headers(production_url):
    reply = http("GET", production_url + "/v1/events", headers=HTTPS)
    assert reply.status == 401 and reply.body["error"]["code"] == "UNAUTHORIZED"
    _assert_browser_headers(reply, "/v1/events")


def _raw(url: str, request: bytes) -> bytes:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return data


def test_header_abuse_is_refused_by_gunicorn_or_enveloped_by_the_app(production_url):
    head = b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n"
    # Within gunicorn's limits the application answers, in the envelope.
    reply = _raw(production_url, head + b"Authorization: Bearer " + b"a" * 6000 + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 401") and b'"code":"UNAUTHORIZED"' in reply
    # Past them (8,190 bytes in one header, more than 100 headers) gunicorn refuses before the application
    # runs: 431, its own small HTML page (docs/operations/monitoring.md "Logging and redaction").
    for abuse in (
        b"Authorization: Bearer " + b"a" * 9000 + b"\r\n",
        b"".join(b"X-H%d: 1\r\n" % i for i in range(120)),
    ):
        assert _raw(production_url, head + abuse + b"\r\n").startswith(b"HTTP/1.1 431")
