"""The response envelope (docs/partners/conventions.md "API conventions"): ``{success, data | error, meta: {request_id, timestamp}}``."""

from datetime import UTC
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from config.logging import request_id_var

from .errors import ApiError


def utc_iso(value) -> str:
    """UTC ISO 8601 with a ``Z``, whole seconds (docs/partners/conventions.md "API conventions")."""
    # isoformat, not strftime: glibc's %Y drops the leading zeros of years before 1000.
    return value.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def meta(request: HttpRequest | None = None) -> dict[str, str]:
    request_id = getattr(request, "request_id", None) if request is not None else None
    return {"request_id": request_id or request_id_var.get(), "timestamp": utc_iso(timezone.now())}


def success_body(data: Any, request: HttpRequest | None = None) -> dict[str, Any]:
    return {"success": True, "data": data, "meta": meta(request)}


def error_body(error: ApiError, request: HttpRequest | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details is not None:
        body["details"] = error.details
    return {"success": False, "error": body, "meta": meta(request)}


def error_headers(error: ApiError) -> dict[str, str]:
    """The error's headers; every 401 names the Bearer scheme (RFC 6750, docs/partners/authentication.md "Authentication")."""
    headers = dict(error.headers)
    if error.status == 401 and not any(name.lower() == "www-authenticate" for name in headers):
        headers["WWW-Authenticate"] = 'Bearer realm="partner-api"'
    return headers


def error_json_response(error: ApiError, request: HttpRequest | None = None) -> JsonResponse:
    """For the few places outside DRF (middleware, Django's 404/500 handlers)."""
    response = JsonResponse(error_body(error, request), status=error.status)
    for name, value in error_headers(error).items():
        response[name] = value
    return response
