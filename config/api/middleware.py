import string
import tempfile

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse
from django.middleware import common

from config.core.ids import new_public_id
from config.logging import request_id_var

from . import errors
from .envelope import error_json_response
from .headers import put

_PRINTABLE = set(string.printable) - set("\t\n\r\x0b\x0c")


def new_request_id() -> str:
    """``req_`` and 24 letters and digits, uniformly drawn, as every public id (one read of the system's
    generator, mapped to characters by ``bytes.translate``)."""
    return new_public_id("req", 24)


def _client_request_id(value: str | None) -> str | None:
    if value and len(value) <= 128 and all(ch in _PRINTABLE for ch in value) and value.strip():
        return value
    return None


def is_api_path(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


class CommonMiddleware(common.CommonMiddleware):
    """Django's common middleware, but a 304 is left without ``Content-Length``.

    Django gives every answer that is not streamed the length of its content, so a 304 went out with
    ``Content-Length: 0``. HTTP allows a 304's ``Content-Length`` only when it is the length of the 200 it stands
    for (RFC 9110, section 8.6): a cache that takes the 304's header fields into the answer it keeps would
    otherwise keep a length of 0 for a body of 10 KB. The rest of the middleware has nothing to do for a 304
    (its other hook is a 404's redirect to the path with a slash)."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.status_code == 304:
            return response
        return super().process_response(request, response)


class RequestIdMiddleware:
    """Gives every request an id (``X-Request-ID`` in and out, ``meta.request_id``, every log line)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return with_request_id(request, self.get_response)


def with_request_id(request: HttpRequest, get_response) -> HttpResponse:
    """``get_response(request)`` under the request's id, answered with ``X-Request-ID`` and, once the request
    was counted, the rate-limit headers (the request id middleware, and the reads' own path:
    config/api/routes.py)."""
    request_id = _client_request_id(request.META.get("HTTP_X_REQUEST_ID")) or new_request_id()
    request.request_id = request_id
    token = request_id_var.set(request_id)
    try:
        response = get_response(request)
    finally:
        request_id_var.reset(token)
    put(response, "X-Request-ID", request_id)
    state = getattr(request, "ratelimit", None)
    if state is not None:
        for name, value in state.headers().items():
            put(response, name, value)
    return response


class ApiBodyLimitMiddleware:
    """413 in the envelope for a non-file API body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``.

    DRF's JSON parser reads the stream without Django's size check, so the limit is enforced here, from
    Content-Length, before anything is read. Multipart bodies carry the order PDF, whose own 10 MB limit
    is enforced while streaming by the orders upload handler.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api_path(request.path) and not request.content_type.startswith("multipart/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if limit is not None and length > limit:
                return error_json_response(
                    errors.PayloadTooLarge(f"The request body is larger than {limit} bytes."), request
                )
        return self.get_response(request)


# Multipart bodies carry the order PDF (10 MB) plus the form fields and part headers around it.
MULTIPART_OVERHEAD_BYTES = 1024 * 1024
_CHUNK = 64 * 1024


def body_limit(content_type: str) -> int:
    """Largest body the service reads: the PDF plus overhead for multipart, else Django's limit."""
    if content_type.startswith("multipart/"):
        return settings.ORDER_PDF_MAX_BYTES + MULTIPART_OVERHEAD_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or settings.ORDER_PDF_MAX_BYTES


class ChunkedBodyMiddleware:
    """Reads a ``Transfer-Encoding: chunked`` body, which Django would take as empty.

    Django sizes the body from Content-Length, which a chunked request does not send. gunicorn de-chunks
    ``wsgi.input``; the body is copied from it into a spooled temporary file (in memory up to
    ``FILE_UPLOAD_MAX_MEMORY_SIZE``, on disk past it) and the request then reads it like any other,
    with its length as Content-Length. A body over :func:`body_limit` is 413 PAYLOAD_TOO_LARGE as soon
    as it passes the limit, before the rest is read. Behind nginx (config/deploy/nginx) the body arrives already
    de-chunked with a Content-Length and this does nothing.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        encoding = request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if "chunked" not in encoding or request.META.get("CONTENT_LENGTH"):
            return self.get_response(request)
        limit = body_limit(request.content_type or "")
        source = request.environ["wsgi.input"]
        with tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE) as spool:
            size = 0
            while chunk := source.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    return error_json_response(
                        errors.PayloadTooLarge(f"The request body is larger than {limit} bytes."), request
                    )
                spool.write(chunk)
            spool.seek(0)
            request.META["CONTENT_LENGTH"] = str(size)
            request._stream = LimitedStream(spool, size)
            return self.get_response(request)
