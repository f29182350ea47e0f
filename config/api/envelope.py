"""The response envelope of spec 2.1 / 7.1: ``{success, data | error, meta: {request_id, timestamp}}``."""

from datetime import UTC
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from config.logging import request_id_var

from .errors import ApiError


def utc_iso(value) -> str:
    """UTC ISO 8601 with a ``Z``, whole seconds (DECISIONS: wire conventions)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def error_json_response(error: ApiError, request: HttpRequest | None = None) -> JsonResponse:
    """For the few places outside DRF (middleware, Django's 404/500 handlers)."""
    response = JsonResponse(error_body(error, request), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response
