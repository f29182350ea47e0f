"""A TCP server on 127.0.0.1 that reads each request and then answers with whatever bytes a test scripts:
a trickle, a reset, a body of 50 MB, invalid bytes. It counts connections and requests."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable


def read_request(conn: socket.socket) -> bytes:
    """The request's head and body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def reset(conn: socket.socket) -> None:
    """Close with an RST rather than a FIN: the peer's next read fails with a reset."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


class RawServer:
    """Accepts connections; for each, reads the request then calls ``answer(conn)`` in its own thread."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []
        self.first_request_at: float | None = None
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            request = read_request(conn)
            with self.lock:
                self.requests.append(request)
                if self.first_request_at is None:
                    self.first_request_at = time.monotonic()
            self.answer(conn)
        except OSError:
            pass  # the client gave up (its deadline): that is the point of most tests
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):
            self.listener.close()


def drip(data: bytes, *, every: float = 1.0, stop: threading.Event | None = None) -> Callable:
    """An answer sent one byte every ``every`` seconds (then, if ``data`` runs out, silence)."""

    def answer(conn: socket.socket) -> None:
        for i in range(len(data)):
            if stop is not None and stop.is_set():
                return
            conn.sendall(data[i : i + 1])
            time.sleep(every)

    return answer


def endless_drip(head: bytes = b"HTTP/1.1 200 OK\r\n", *, every: float = 1.0, stop: threading.Event):
    """A status line, then a header line that never ends: one byte every ``every`` seconds until ``stop``."""

    def answer(conn: socket.socket) -> None:
        conn.sendall(head)
        conn.sendall(b"X-Slow: ")
        while not stop.is_set():
            conn.sendall(b"a")
            stop.wait(every)

    return answer
