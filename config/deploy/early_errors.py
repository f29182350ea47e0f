"""gunicorn's own refusals in the API's envelope (docs/partners/conventions.md "Answers that are not JSON").

gunicorn answers a request it cannot parse (a request line over ``limit_request_line``, more header fields than
``limit_request_fields`` or one over ``limit_request_field_size``, a malformed method, request line or header, an
unsupported Transfer-Encoding) itself, before the application runs, with a small HTML page. Its workers write
that page through ``gunicorn.util.write_error``; :func:`install` replaces it with :func:`write_error`, which writes
the envelope instead: the error code, a request id (``X-Request-ID`` and ``meta.request_id``) and the time. The
path is often unknown at that point (the request line is what failed), so every such answer is the envelope.

Imports nothing of Django: the gunicorn configuration loads it in the master, before the application.
"""

from __future__ import annotations

import json
import time
from http import HTTPStatus

from gunicorn import util

from config.api import errors
from config.core.ids import new_public_id


def envelope_for(status: int, message: str) -> tuple[int, type[errors.ApiError], dict | None]:
    """The status, error and details for gunicorn's ``status`` and its (English) message of the refusal."""
    if status == 431:
        issue = "too_large" if "size" in message else "too_many_fields"
        return 431, errors.RequestHeadersTooLarge, {"field": "headers", "issue": issue}
    if status == 400:
        if message.startswith("Request Line is too large"):
            return 400, errors.ValidationFailed, {"field": "request_line", "issue": "too_large"}
        if message.startswith("Invalid Method"):
            return 400, errors.ValidationFailed, {"field": "method", "issue": "invalid"}
        return 400, errors.ValidationFailed, {"field": "request", "issue": "invalid"}
    if status == 501:
        return 501, errors.UnsupportedTransferCoding, {"field": "Transfer-Encoding", "issue": "invalid"}
    if status == 403:
        return 403, errors.Forbidden, None
    return 500, errors.InternalError, None


def write_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's ``util.write_error`` (same arguments), answering the envelope."""
    status, error, details = envelope_for(status_int, mesg)
    request_id = new_public_id("req", 24)  # as the application draws it (config.api.middleware)
    body: dict = {"code": error.code, "message": error.message}
    if details is not None:
        body["details"] = details
    payload = json.dumps(
        {
            "success": False,
            "error": body,
            "meta": {
                "request_id": request_id,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        },
        separators=(",", ":"),
    ).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"X-Request-ID: {request_id}\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode("latin-1")
    util.write_nonblock(sock, head + payload)


def install() -> None:
    """Make every gunicorn worker of this process (and of the workers it forks) answer the envelope."""
    util.write_error = write_error
