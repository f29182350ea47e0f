"""The deadline holds over TLS too (the handshake and each read of an encrypted answer), and a certificate
that does not verify is one failed attempt. A real TLS server on 127.0.0.1 with a certificate made here."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from orders.webhooks import services, transport
from orders.webhooks.models import WebhookAttempt

from .conftest import order_notification, register
from .rawserver import RawServer, read_request

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1: (certificate file, key file)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@pytest.fixture
def trusting(monkeypatch, certificate):
    """The sender trusts the test certificate (as it trusts the system's authorities in production)."""
    real = transport._tls_context

    def context():
        ctx = real()
        ctx.load_verify_locations(cafile=str(certificate[0]))
        return ctx

    monkeypatch.setattr(transport, "_tls_context", context)


class TlsServer:
    """Accepts TCP, then (unless ``handshake`` is False) TLS; reads the request and runs ``answer``."""

    def __init__(self, certificate, answer, *, handshake: bool = True) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*map(str, certificate))
        self.answer, self.handshake = answer, handshake
        self.stop = threading.Event()
        self.raw = RawServer(lambda conn: None)  # only for its listener and thread
        self.raw._serve = self._serve  # type: ignore[method-assign]
        self.port = self.raw.port
        self.requests: list[bytes] = []

    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/hook"

    def _serve(self, conn: socket.socket) -> None:
        try:
            if not self.handshake:
                self.stop.wait(30)  # never answers the ClientHello
                return
            with self.context.wrap_socket(conn, server_side=True) as tls:
                self.requests.append(read_request(tls))
                self.answer(tls, self.stop)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.raw.close()


@pytest.fixture
def tls_servers(certificate):
    started: list[TlsServer] = []

    def start(answer=None, *, handshake: bool = True) -> TlsServer:
        server = TlsServer(certificate, answer, handshake=handshake)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def deliver_to(partner, url: str, capture) -> WebhookAttempt:
    register(partner, url)
    with capture(execute=True):
        services.notification_fan_out(order_notification(partner))
    return WebhookAttempt.objects.get()


def test_a_delivery_over_tls_succeeds(partner, trusting, tls_servers, django_capture_on_commit_callbacks):
    server = tls_servers(lambda tls, stop: tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
    attempt = deliver_to(partner, server.url(), django_capture_on_commit_callbacks)
    assert (attempt.status, attempt.response_status, attempt.response_body_excerpt) == (
        "succeeded",
        200,
        "ok",
    )
    assert b"webhook-signature: v1," in server.requests[0]


def test_an_answer_trickling_over_tls_ends_at_the_deadline(
    partner, trusting, tls_servers, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS = 3

    def answer(tls, stop):
        tls.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while not stop.is_set():
            tls.sendall(b"a")  # one encrypted record a quarter second: never 10 s of silence
            stop.wait(0.25)

    server = tls_servers(answer)
    attempt = deliver_to(partner, server.url(), django_capture_on_commit_callbacks)
    assert attempt.error == "timeout: the attempt did not complete within 3 s"
    assert 2_900 <= attempt.duration_ms <= 4_000
    assert attempt.status == "retrying"


def test_a_tls_handshake_that_never_answers_times_out(
    partner, tls_servers, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    server = tls_servers(handshake=False)
    attempt = deliver_to(partner, server.url(), django_capture_on_commit_callbacks)
    assert attempt.error == "timeout: nothing received for 1 s"
    assert attempt.status == "retrying"


def test_a_certificate_that_does_not_verify_is_one_failed_attempt(
    partner, tls_servers, django_capture_on_commit_callbacks
):
    server = tls_servers(lambda tls, stop: tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    attempt = deliver_to(partner, server.url(), django_capture_on_commit_callbacks)
    assert attempt.response_status is None
    assert attempt.error.startswith("connection_error: SSLCertVerificationError"), attempt.error
    assert attempt.status == "retrying"
    assert server.requests == []  # nothing was sent to a server that could not prove its name
