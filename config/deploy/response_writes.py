"""An answer's head and body in one write to the socket.

gunicorn writes an answer's status line and headers with one ``send`` and then each piece of its body with another,
so even the smallest answer costs the worker two system calls and the connection two TCP segments, and the
client (nginx in front, or a partner's client) two reads. :func:`install` makes gunicorn's ``Response.write`` send
the head together with the first piece of the body when the answer has a ``Content-Length`` (every answer of the
API, each of them one piece), with the same bytes as before; a chunked answer, a file sent with ``sendfile`` and
every later piece are written as gunicorn writes them. A catalog read costs the worker 2–5% less CPU
(bench/README.md, "an answer in one write").

Imports nothing of Django: the gunicorn configuration loads it in the master, before the application.
"""

from __future__ import annotations

from gunicorn import util
from gunicorn.http.wsgi import Response

_GUNICORNS_WRITE = Response.write


def _head(response: Response) -> bytes:
    """The status line and headers as gunicorn's ``Response.send_headers`` writes them."""
    lines = response.default_headers()
    lines.extend([f"{name}: {value}\r\n" for name, value in response.headers])
    return util.to_bytestring("{}\r\n".format("".join(lines)), "latin-1")


def write(response: Response, data: bytes) -> None:
    """gunicorn's ``Response.write``, sending the head with the first piece of a body of known length."""
    if (
        response.headers_sent
        or response.chunked
        or response.response_length is None
        or type(data) is not bytes
    ):
        _GUNICORNS_WRITE(response, data)
        return
    head = _head(response)
    body = data[: max(response.response_length - response.sent, 0)]  # never more than Content-Length says
    util.write(response.sock, head + body)
    response.headers_sent = True
    response.sent += len(body)


def install() -> None:
    """Make every gunicorn worker of this process (and of the workers it forks) write that way."""
    Response.write = write
