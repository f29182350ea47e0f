"""One webhook POST with a hard wall-clock deadline, whatever the other end does.

Every socket call (connect, the TLS handshake, each send, each read) waits at most the per-phase timeout
(``WEBHOOK_TIMEOUT_SECONDS``, 10 s) and never past the attempt's deadline (``WEBHOOK_ATTEMPT_DEADLINE_SECONDS``,
15 s from the connect): an endpoint that answers one byte a second is cut off at the deadline, not after
``timeout × bytes``. Only the first ``excerpt_bytes`` of the body are read; the rest is never loaded.
"""

from __future__ import annotations

import codecs
import http.client
import socket
import ssl
import time
from dataclasses import dataclass


class DeadlinePassed(TimeoutError):
    """The attempt's wall-clock deadline has passed."""


class _Armed:
    """Before each blocking call, the socket's timeout becomes the phase timeout or the time left."""

    deadline: float = 0.0
    phase_timeout: float = 10.0

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("the attempt's deadline passed")
        self.settimeout(min(left, self.phase_timeout))  # type: ignore[attr-defined]


class _DeadlineSocket(_Armed, socket.socket):
    def recv(self, *args, **kwargs):
        self._arm()
        return super().recv(*args, **kwargs)

    def recv_into(self, *args, **kwargs):
        self._arm()
        return super().recv_into(*args, **kwargs)

    def send(self, *args, **kwargs):
        self._arm()
        return super().send(*args, **kwargs)

    def sendall(self, data, *args, **kwargs):
        # socket.sendall would wait up to the timeout per chunk: send piece by piece, re-armed each time.
        view = memoryview(data).cast("B")
        while view:
            sent = self.send(view, *args, **kwargs)
            view = view[sent:]


class _DeadlineSSLSocket(_Armed, ssl.SSLSocket):
    # SSLSocket.recv/recv_into go through read(), sendall through send(); the C side waits on the socket's
    # timeout for each call (the handshake included), which _arm() sets to what is left.
    def do_handshake(self, *args, **kwargs):
        self._arm()
        return super().do_handshake(*args, **kwargs)

    def read(self, *args, **kwargs):
        self._arm()
        return super().read(*args, **kwargs)

    def send(self, *args, **kwargs):
        self._arm()
        return super().send(*args, **kwargs)


class _Connection(http.client.HTTPConnection):
    """http.client over a socket that is already connected (and armed)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__("unused.invalid")
        self.sock = sock

    def connect(self) -> None:  # pragma: no cover - the socket is connected before the request
        raise http.client.NotConnected("the connection is made before the request")


@dataclass
class Answer:
    status: int | None = None  # None: no status line came back
    headers: http.client.HTTPMessage | None = None
    body: bytes = b""
    error: BaseException | None = None  # set when the exchange did not complete
    deadline_passed: bool = False


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.sslsocket_class = _DeadlineSSLSocket
    return context


def post(
    *,
    scheme: str,
    address: str,
    port: int,
    server_hostname: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    phase_timeout: float,
    deadline_seconds: float,
    excerpt_bytes: int,
) -> Answer:
    """POST ``body`` to ``address:port`` and read the status, the headers and the body's first bytes.

    Never raises for anything the network or the other end does: the answer says how far it got."""
    answer = Answer()
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock: socket.socket = _DeadlineSocket(family, socket.SOCK_STREAM)
    sock.deadline = time.monotonic() + deadline_seconds
    sock.phase_timeout = phase_timeout
    connection: _Connection | None = None
    try:
        sock._arm()
        sock.connect((address, port))
        if scheme == "https":
            # The certificate and SNI are checked for the URL's host name, on the checked address.
            tls = _tls_context().wrap_socket(
                sock, server_hostname=server_hostname, do_handshake_on_connect=False
            )
            tls.deadline, tls.phase_timeout = sock.deadline, phase_timeout
            sock = tls
            tls.do_handshake()
        connection = _Connection(sock)
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        answer.status, answer.headers = response.status, response.headers
        answer.body = response.read(excerpt_bytes) or b""
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # Whatever the network or the other end did (a timeout, a reset, a malformed answer, a certificate
        # that does not verify) is the attempt's error. Anything else is the caller's to record.
        answer.error = exc
        answer.deadline_passed = isinstance(exc, DeadlinePassed) or time.monotonic() >= sock.deadline
    finally:
        if connection is not None:
            connection.close()
        sock.close()
    return answer


def text_of(data: bytes) -> str:
    """Bytes as text for the database: UTF-8 with invalid bytes replaced, a sequence cut at the end dropped,
    and NUL (which PostgreSQL's text refuses) replaced."""
    decoded = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=False)
    return clean_text(decoded)


def clean_text(value: str) -> str:
    """Any text (an exception's message, a header) made safe to store: no NUL, no lone surrogate."""
    return value.encode("utf-8", errors="replace").decode("utf-8").replace("\x00", "\ufffd")
