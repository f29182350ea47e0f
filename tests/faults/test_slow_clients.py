"""Slow clients behind nginx (the Procfile's web process: python -m config.deploy.serve): 40 connections
trickling a body one byte every 2 s do not stop normal requests; nginx's own refusals are envelopes."""

import contextlib
import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from config.api.middleware import body_limit
from config.deploy import nginx

from .live import http, production_env

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_CLIENTS = 40
TRICKLE_SECONDS = 12  # each slow client sends one byte every 2 s for this long
# Had the slow clients reached gunicorn (16 threads for 40 of them), a normal request would wait for the trickle to
# end; each one meanwhile answering within half of it tells the two apart, however busy the machine is.
PROMPT = TRICKLE_SECONDS / 2


def _slow_client(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
    sock.sendall(
        b"POST /v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 4096\r\n\r\n{"
    )
    return sock


def test_forty_slow_clients_do_not_stop_normal_requests(processes, creds):
    url = processes.proxied_web(production_env(TOKEN_RATE_LIMIT_PER_MINUTE="1000000"))
    body = {
        "client_id": creds.client_id,
        "client_secret": creds.client_secret,
        "grant_type": "client_credentials",
    }
    token = http("POST", url + "/v1/auth/token", json_body=body)
    assert token.status == 200, token.body
    auth = {"Authorization": f"Bearer {token.body['data']['access_token']}"}

    slow = [_slow_client(url) for _ in range(SLOW_CLIENTS)]
    served = []
    try:
        started = time.monotonic()
        next_byte = started + 2
        while time.monotonic() - started < TRICKLE_SECONDS:
            if time.monotonic() >= next_byte:
                for sock in slow:
                    sock.sendall(b" ")
                next_byte += 2
            for reply in (
                http("GET", url + "/v1/events", headers=auth, timeout=10),
                http("POST", url + "/v1/auth/token", json_body=body, timeout=10),
            ):
                served.append(reply)
                assert reply.status in (200, 201), reply.body
                assert reply.seconds < PROMPT, (reply.status, reply.seconds)
            time.sleep(0.1)
    finally:
        for sock in slow:
            sock.close()
    assert len(served) >= 20


def test_a_body_over_nginx_limit_is_413_in_the_envelope_before_it_reaches_the_service(processes, creds):
    url = processes.proxied_web(production_env())
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: multipart/form-data; boundary=x\r\n"
            + f"Content-Length: {nginx.max_body_bytes() + 1}\r\n\r\n".encode()
        )
        raw = b""
        with contextlib.suppress(ConnectionResetError):  # nginx closes at once, not reading the body
            while chunk := sock.recv(65536):
                raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b'"code":"PAYLOAD_TOO_LARGE"' in payload and b'"request_id":"req_' in payload
    assert json.loads(payload)["meta"]["timestamp"].endswith("Z"), payload
    assert b"X-Request-ID: req_" in head


def test_nginx_takes_exactly_the_largest_body_the_service_reads():
    assert nginx.max_body_bytes() == body_limit("multipart/form-data; boundary=x")


def test_chunked_bodies_arrive_de_chunked_through_nginx(processes, creds):
    import http.client

    url = processes.proxied_web(production_env())
    parts = urlsplit(url)
    body = json.dumps(
        {
            "client_id": creds.client_id,
            "client_secret": creds.client_secret,
            "grant_type": "client_credentials",
        }
    ).encode()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(
        "POST",
        "/v1/auth/token",
        body=(body[i : i + 5] for i in range(0, len(body), 5)),
        headers={"Content-Type": "application/json"},
        encode_chunked=True,
    )
    response = conn.getresponse()
    assert response.status == 200, response.read()
    conn.close()


def test_nginx_answers_503_in_the_envelope_when_gunicorn_does_not_answer(processes, tmp_path):
    from .live import free_port, wait_for

    port = free_port()
    conf = nginx.render(
        prefix=tmp_path / "nginx-alone", listen=f"127.0.0.1:{port}", upstream=f"127.0.0.1:{free_port()}"
    )
    process = processes.spawn("nginx-alone", nginx.command(conf), env={})
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        try:
            return http("GET", url + "/v1/events", timeout=2).status == 503
        except OSError:
            return False

    assert wait_for(answering, timeout=10), process.output()
    reply = http("POST", url + "/v1/auth/token", json_body={"client_id": "cli_x"})
    assert reply.status == 503 and reply.code == "SERVICE_UNAVAILABLE", reply.body
    assert reply.body["meta"]["request_id"] == reply.headers["X-Request-ID"]
    assert reply.body["meta"]["timestamp"].endswith("Z")
    assert reply.headers["Retry-After"] == "5"
