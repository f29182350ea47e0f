"""Operational endpoints and Django-level error handlers (outside DRF)."""

import logging
from pathlib import Path

from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views import defaults
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from config.api import errors
from config.api.envelope import error_json_response, success_body
from config.api.middleware import is_api_path

logger = logging.getLogger(__name__)


_FAVICON = Path(__file__).with_name("static") / "favicon.ico"


@require_safe
@cache_control(public=True, max_age=86400)
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``: the brand mark, which browsers ask for on every page (the templates link it)."""
    return HttpResponse(_FAVICON.read_bytes(), content_type="image/x-icon")


def home(request: HttpRequest) -> HttpResponse:
    """``/``: where a person who typed the bare address goes next (the API reference or the portal)."""
    return render(request, "home.html")


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive. Touches no dependency, so a load balancer may call it every second."""
    return JsonResponse(success_body({"status": "ok"}, request))


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """The database and Redis answer; 503 naming the failing component otherwise."""
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception:
        logger.warning("readiness: database not answering", exc_info=True)
        checks["database"] = "unavailable"
    try:
        cache.get("readyz:probe")
        checks["redis"] = "ok"
    except Exception:
        logger.warning("readiness: redis not answering", exc_info=True)
        checks["redis"] = "unavailable"
    failing = [name for name, state in checks.items() if state != "ok"]
    if failing:
        return error_json_response(
            errors.ServiceUnavailable(
                f"Not ready: {', '.join(failing)}.", details={"checks": checks, "failing": failing}
            ),
            request,
        )
    return JsonResponse(success_body({"status": "ready", "checks": checks}, request))


# The API authenticates with bearer tokens, never cookies: a POST to an unknown path is a 404 in the
# envelope like a GET, not Django's CSRF page.
@csrf_exempt
def api_not_found(request: HttpRequest, *args, **kwargs) -> JsonResponse:
    return error_json_response(errors.NotFound(f"No endpoint at {request.path}."), request)


def handler404(request: HttpRequest, exception: Exception | None = None):
    if is_api_path(request.path):
        return api_not_found(request)
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest):
    if is_api_path(request.path):
        return error_json_response(errors.InternalError(), request)
    return defaults.server_error(request)


def handler400(request: HttpRequest, exception: Exception | None = None):
    if is_api_path(request.path):
        return error_json_response(
            errors.ValidationFailed("Bad request.", field="body", issue="invalid"), request
        )
    return defaults.bad_request(request, exception)


def handler403(request: HttpRequest, exception: Exception | None = None):
    if is_api_path(request.path):
        return error_json_response(errors.Forbidden(), request)
    return defaults.permission_denied(request, exception)
