"""Drive the real WSGI handler with a body streamed from a file, as a server would.

Django's test client builds the whole request body in memory (and copies it), which would hide whether the
service itself buffers an upload; this helper feeds ``wsgi.input`` from disk instead.
"""

import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from config.core.request_cycle import SERVER_RECEIVERS

BOUNDARY = "----partner-order-test-boundary-7MA4YWxkTrZu0gW"
PDF_HEAD = b"%PDF-1.7\n"


def write_multipart(
    path: Path,
    fields: list[tuple[str, str]],
    *,
    file_size: int | None,
    head: bytes = PDF_HEAD,
    file_name: str = "tickets.pdf",
    fields_after: list[tuple[str, str]] = (),
) -> int:
    """Write a multipart body (fields, then a ``file`` part of ``file_size`` bytes, then more fields)."""

    def field(fh, name, value):
        fh.write(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())

    with path.open("wb") as fh:
        for name, value in fields:
            field(fh, name, value)
        if file_size is not None:
            fh.write(
                f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
                "Content-Type: application/pdf\r\n\r\n".encode()
            )
            fh.write(head[:file_size])
            remaining = file_size - min(len(head), file_size)
            block = b"0" * (1024 * 1024)
            while remaining:
                chunk = block[: min(remaining, len(block))]
                fh.write(chunk)
                remaining -= len(chunk)
            fh.write(b"\r\n")
        for name, value in fields_after:
            field(fh, name, value)
        fh.write(f"--{BOUNDARY}--\r\n".encode())
    return path.stat().st_size


@dataclass
class WsgiResponse:
    status_code: int
    content: bytes

    def json(self):
        import json

        return json.loads(self.content)


def wsgi_post(
    path: str, body_path: Path, *, token: str, headers: dict[str, str] | None = None
) -> WsgiResponse:
    """POST the body file through the WSGI handler; ``headers`` are extra WSGI environ entries (HTTP_…)."""
    status_holder = {}

    def start_response(status, headers, exc_info=None):
        status_holder["status"] = int(status.split()[0])

    size = body_path.stat().st_size
    with body_path.open("rb") as stream:
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": f"multipart/form-data; boundary={BOUNDARY}",
            "CONTENT_LENGTH": str(size),
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "wsgi.input": stream,
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0),
            "wsgi.multithread": False,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            **(headers or {}),
        }
        # As Django's test client does: keep the test's transaction (and its connection) across the request.
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        for signal, function, sender in SERVER_RECEIVERS:
            signal.disconnect(function, sender=sender)
        try:
            result = WSGIHandler()(environ, start_response)
            try:
                content = b"".join(result)
            finally:
                result.close()
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)
            for signal, function, sender in SERVER_RECEIVERS:
                signal.connect(function, sender=sender)
    return WsgiResponse(status_holder["status"], content)


def rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class PeakRss:
    """Samples the process's VmRSS every millisecond while active; ``peak`` is the largest value seen."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            self._stop.wait(0.001)

    def __enter__(self):
        self.peak = rss_bytes()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())


def list_files(directory: Path) -> list[str]:
    return (
        sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())
        if directory.exists()
        else []
    )
