"""One handler turns every exception raised inside a DRF view into the envelope (docs/partners/conventions.md "API conventions")."""

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import DataError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from . import errors
from .envelope import error_body, error_headers
from .idempotency import IdempotentReplay, replay_response

logger = logging.getLogger("config.api")

# DRF / Django validation codes folded into the machine words the API documents.
_ISSUE_WORDS = {
    "required": "required",
    "null": "required",
    "blank": "required",
    "max_length": "too_long",
    "min_length": "too_short",
    "max_value": "out_of_range",
    "min_value": "out_of_range",
    "max_digits": "out_of_range",
    "max_decimal_places": "invalid",
    "invalid_choice": "invalid_choice",
    "too_large": "too_large",
    "in_the_past": "in_the_past",
    "empty": "required",
    "invalid_type": "invalid_type",
}


def _issue(code: str | None) -> str:
    return _ISSUE_WORDS.get(code or "invalid", "invalid" if code not in _ISSUE_WORDS.values() else code)


def _flatten(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    items: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = "body" if key in ("non_field_errors", "__all__") and not prefix else key
            items.extend(_flatten(value, f"{prefix}.{name}" if prefix else str(name)))
    elif isinstance(detail, list):
        if detail and all(isinstance(d, str) for d in detail):
            for d in detail:
                items.append(
                    {"field": prefix or "body", "issue": _issue(getattr(d, "code", None)), "message": str(d)}
                )
        else:
            for index, value in enumerate(detail):
                items.extend(_flatten(value, f"{prefix}[{index}]"))
    else:
        items.append(
            {
                "field": prefix or "body",
                "issue": _issue(getattr(detail, "code", None)),
                "message": str(detail),
            }
        )
    return items


def validation_error_from_drf(exc: drf.ValidationError) -> errors.ValidationFailed:
    items = _flatten(exc.detail) or [{"field": "body", "issue": "invalid", "message": "Invalid request."}]
    first = items[0]
    details: dict[str, Any] = {}
    if len(items) > 1:
        details["errors"] = [{"field": i["field"], "issue": i["issue"]} for i in items]
    return errors.ValidationFailed(
        f"{first['field']}: {first['message']}", field=first["field"], issue=first["issue"], details=details
    )


def _raised_while_parsing(exc: BaseException) -> bool:
    """A RecursionError from decoding the body (deeply nested JSON), not from the service's own code."""
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(("rest_framework/parsers.py", "json/__init__.py", "json/decoder.py")):
            return True
        tb = tb.tb_next
    return False


def as_api_error(exc: Exception, context: dict[str, Any] | None = None) -> errors.ApiError:
    """Map any exception to the catalogue entry that describes it."""
    if isinstance(exc, errors.ApiError):
        return exc
    if isinstance(exc, drf.ValidationError):
        return validation_error_from_drf(exc)
    if isinstance(exc, drf.ParseError):
        return errors.ValidationFailed(
            f"The request body could not be parsed: {exc.detail}", field="body", issue="invalid"
        )
    if isinstance(exc, drf.UnsupportedMediaType):
        return errors.ValidationFailed(
            f"Unsupported Content-Type: {exc.detail}", field="body", issue="unsupported_media_type"
        )
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return errors.Unauthorized(headers={"WWW-Authenticate": 'Bearer realm="partner-api"'})
    if isinstance(exc, drf.PermissionDenied | DjangoPermissionDenied):
        return errors.Forbidden()
    if isinstance(exc, drf.NotFound | Http404):
        return errors.NotFound()
    if isinstance(exc, drf.MethodNotAllowed):
        view = (context or {}).get("view")
        allow = ", ".join(getattr(view, "allowed_methods", []) or [])
        return errors.MethodNotAllowed(
            f"Method {exc.args[0] if exc.args else ''} is not allowed here.".replace("  ", " "),
            headers={"Allow": allow} if allow else None,
        )
    if isinstance(exc, drf.Throttled):
        wait = max(1, int(exc.wait or 1))
        return errors.RateLimitExceeded(headers={"Retry-After": str(wait)})
    if isinstance(exc, RequestDataTooBig):
        return errors.PayloadTooLarge()
    if isinstance(exc, TooManyFieldsSent):
        # 413 is for a body over the size limit only; too many small fields is a 400 (docs/partners/conventions.md "API conventions", body limits).
        request = (context or {}).get("request")
        query = getattr(request, "META", {}).get("QUERY_STRING", "")
        field = "query" if query.count("&") + 1 > settings.DATA_UPLOAD_MAX_NUMBER_FIELDS else "body"
        return errors.ValidationFailed(
            f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields.",
            field=field,
            issue="too_many_fields",
        )
    if isinstance(exc, TooManyFilesSent):
        # Raised by the first read of a multipart body, which may be the Idempotency-Key fingerprint's.
        return errors.ValidationFailed("Too many files in the form.", field="body", issue="too_many_files")
    if isinstance(exc, DataError) and "\x00" in getattr((context or {}).get("request"), "path", ""):
        # A NUL in the path reached PostgreSQL ("text fields cannot contain NUL"): no such resource.
        return errors.NotFound("No resource at this path.")
    if isinstance(exc, RecursionError) and _raised_while_parsing(exc):
        return errors.ValidationFailed(
            "The request body is nested too deeply.", field="body", issue="too_deep"
        )
    if isinstance(exc, drf.NotAcceptable):
        return errors.ValidationFailed("Unsupported Accept header.", field="Accept", issue="invalid")
    return errors.InternalError()


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, IdempotentReplay):
        return replay_response(exc, context.get("request"))
    error = as_api_error(exc, context)
    request = context.get("request")
    if isinstance(error, errors.InternalError) and not isinstance(exc, errors.ApiError):
        logger.exception(
            "Unhandled error in %s", getattr(context.get("view"), "__class__", type(None)).__name__
        )
    set_rollback()
    response = Response(error_body(error, request), status=error.status, headers=error_headers(error) or None)
    response.enveloped = True
    return response
