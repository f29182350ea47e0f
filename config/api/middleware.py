import secrets
import string

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from config.logging import request_id_var

from . import errors
from .envelope import error_json_response

_ALPHABET = string.ascii_letters + string.digits
_PRINTABLE = set(string.printable) - set("\t\n\r\x0b\x0c")


def new_request_id() -> str:
    return "req_" + "".join(secrets.choice(_ALPHABET) for _ in range(24))


def _client_request_id(value: str | None) -> str | None:
    if value and len(value) <= 128 and all(ch in _PRINTABLE for ch in value) and value.strip():
        return value
    return None


def is_api_path(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


class RequestIdMiddleware:
    """Gives every request an id (``X-Request-ID`` in and out, ``meta.request_id``, every log line)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = _client_request_id(request.headers.get("X-Request-ID")) or new_request_id()
        request.request_id = request_id
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = request_id
        state = getattr(request, "ratelimit", None)
        if state is not None:
            for name, value in state.headers().items():
                response[name] = value
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
