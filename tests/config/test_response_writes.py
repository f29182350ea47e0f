"""gunicorn's answers with their head and first piece of body in one write (config/deploy/response_writes.py): the
same bytes as gunicorn's own writes, for every shape of answer, in fewer writes where the length is known."""

from __future__ import annotations

import importlib

import pytest
from gunicorn import util
from gunicorn.config import Config
from gunicorn.http.wsgi import Response

from config.deploy import early_errors, response_writes

# gunicorn's own, as the module kept it before any installation in this process.
GUNICORNS_WRITE = response_writes._GUNICORNS_WRITE
assert GUNICORNS_WRITE.__module__ == "gunicorn.http.wsgi"


class Socket:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))


class Request:
    def __init__(self, method: str, version: tuple[int, int]) -> None:
        self.method = method
        self.version = version

    def should_close(self) -> bool:
        return False


def answer(
    write, *, status: str, headers: list[tuple[str, str]], pieces: list, method: str = "GET", version=(1, 1)
) -> tuple[list[bytes], BaseException | None]:
    """What gunicorn's worker writes for one answer (``start_response``, each piece, ``close``), with ``write`` as
    ``Response.write``: the socket's writes, and the error the writing raised."""
    sock = Socket()
    response = Response(Request(method, version), sock, Config())
    response.write = write.__get__(response)
    response.start_response(status, headers)
    try:
        for piece in pieces:
            response.write(piece)
        response.close()
    except TypeError as exc:
        return sock.writes, exc
    return sock.writes, None


JSON = b'{"success":true,"data":{"status":"ok"}}'
SHAPES = {
    "one piece of its length": ("200 OK", [("Content-Length", str(len(JSON)))], [JSON], "GET", (1, 1), 1),
    "a 304 without a body": ("304 Not Modified", [("ETag", '"v1"')], [], "GET", (1, 1), 1),
    "a 304 with an empty piece": ("304 Not Modified", [("Content-Length", "0")], [b""], "GET", (1, 1), 1),
    "a piece longer than its length": ("200 OK", [("Content-Length", "10")], [JSON], "GET", (1, 1), 1),
    "a length of 0 and a piece": ("200 OK", [("Content-Length", "0")], [JSON], "GET", (1, 1), 1),
    "two pieces of a length": ("200 OK", [("Content-Length", str(2 * len(JSON)))], [JSON, JSON], "GET", (1, 1), 2),
    "an empty first piece": ("200 OK", [("Content-Length", str(len(JSON)))], [b"", JSON], "GET", (1, 1), 2),
    "a HEAD with its length": ("200 OK", [("Content-Length", str(len(JSON)))], [JSON], "HEAD", (1, 1), 1),
    "chunked (no length)": ("200 OK", [("Content-Type", "text/csv")], [b"a,b\r\n", b"1,2\r\n"], "GET", (1, 1), 4),
    "HTTP/1.0 without a length": ("200 OK", [("Content-Type", "text/csv")], [b"a,b\r\n"], "GET", (1, 0), 2),
    "not bytes": ("200 OK", [("Content-Length", "2")], ["ok"], "GET", (1, 1), 1),
}  # fmt: skip


@pytest.fixture(autouse=True)
def fixed_date(monkeypatch):
    monkeypatch.setattr(util, "http_date", lambda timestamp=None: "Tue, 01 Dec 2026 20:00:00 GMT")


@pytest.mark.parametrize("shape", SHAPES)
def test_the_same_bytes_as_gunicorns_own_writes_in_as_few_writes(shape):
    status, headers, pieces, method, version, writes = SHAPES[shape]
    theirs, their_error = answer(
        GUNICORNS_WRITE, status=status, headers=headers, pieces=pieces, method=method, version=version
    )
    ours, our_error = answer(
        response_writes.write, status=status, headers=headers, pieces=pieces, method=method, version=version
    )
    assert b"".join(ours) == b"".join(theirs)
    assert type(our_error) is type(their_error)
    assert len(ours) == writes
    assert len(ours) <= len(theirs)


def test_an_answer_of_the_api_is_one_write_where_gunicorn_made_two():
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(JSON))),
        ("X-Request-ID", "req_1"),
    ]
    theirs, _ = answer(GUNICORNS_WRITE, status="200 OK", headers=headers, pieces=[JSON])
    ours, _ = answer(response_writes.write, status="200 OK", headers=headers, pieces=[JSON])
    assert len(theirs) == 2
    assert ours == [b"".join(theirs)]
    assert ours[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert ours[0].endswith(b"\r\n\r\n" + JSON)


def test_the_production_configuration_installs_it(monkeypatch):
    # Restored after the test: the configuration replaces gunicorn's functions for the whole process.
    monkeypatch.setattr(Response, "write", GUNICORNS_WRITE)
    monkeypatch.setattr(util, "write_error", util.write_error)
    from config.deploy import gunicorn_conf

    importlib.reload(gunicorn_conf)
    assert Response.write is response_writes.write
    assert util.write_error is early_errors.write_error
