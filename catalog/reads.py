"""The catalog reads' own request path: a GET answered from the versioned response store (catalog.cache)
without DRF's dispatch, a serializer or the ORM when the answer is current.

Each catalog URL runs :func:`read_view`: it authenticates the bearer token and counts the rate limit in the
round trip that also reads the catalog versions (and the shared copy of the answer, when this process holds
none), checks the scope, and answers
- ``304 Not Modified`` (no body) when ``If-None-Match`` names the current tag;
- otherwise ``200`` with the stored ``data`` bytes spliced into the envelope, only ``meta`` made per request;
- the database is read only when no copy of the current versions exists (the DRF views' selectors).

A request without an ``Authorization`` header, or with another method, goes to the DRF view, which answers
exactly as every other endpoint (401, 405, ``OPTIONS``, ``HEAD``). The errors answered here (a malformed,
expired or revoked token, a suspended partner, a missing scope, 429, an invalid query, an unknown event or
section) are the envelopes DRF's exception handler makes, in the same order of checks. Request ids and rate-limit headers are set by ``config.api.middleware`` as for any
view; the metrics middleware labels the route as for any view.
"""

import json
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, QueryDict
from rest_framework.renderers import JSONRenderer

from config.api import errors as api_errors
from config.api.envelope import error_body, error_headers
from config.api.envelope import meta as envelope_meta
from config.api.exceptions import as_api_error
from config.api.pagination import PageParamsSerializer
from config.api.renderers import render_compact
from config.api.routes import short_path
from partners.authentication import bearer_authenticate

from . import cache, selectors
from .serializers import EventListParamsSerializer, event_data, row_data, section_data

CONTENT_TYPE = "application/json; charset=utf-8"
CACHE_CONTROL = "private, no-cache"
SCOPE = "events:read"

_encoder = JSONRenderer()


def encoded(data) -> bytes:
    # DRF's encoder, as the envelope renderer uses: Decimals become numbers, output is compact UTF-8.
    return _encoder.render(data)


def page_data(page, render) -> bytes:
    return encoded(
        {
            "results": [render(item) for item in page.results],
            "has_more": page.has_more,
            "next_cursor": page.next_cursor,
        }
    )


@lru_cache(maxsize=1024)
def _validated(serializer_class, query_string: str) -> tuple:
    # Validation depends on the query string alone, so the hot lists skip the serializer after the
    # first request. Failures are not cached (lru_cache keeps only returned values).
    params = serializer_class(data=QueryDict(query_string))
    params.is_valid(raise_exception=True)
    return tuple(sorted(params.validated_data.items()))


def params(serializer_class, request) -> dict:
    """The validated query; raises DRF's ValidationError (the envelope's VALIDATION_ERROR)."""
    return dict(_validated(serializer_class, request.META.get("QUERY_STRING", "")))


class Route(NamedTuple):
    """One catalog answer: its key in the store (endpoint, path parameters, normalised query), the event whose
    availability it shows (``None`` for event pages) and how to build its ``data`` from the database."""

    key: str
    event_id: str | None
    build: Callable[[], cache.Built]


def event_list_route(request, **_) -> Route:
    query = params(EventListParamsSerializer, request)

    def build() -> tuple[bytes, float | None]:
        filters = {k: v for k, v in query.items() if k not in ("limit", "cursor")}
        page, performers = selectors.event_list(
            filters=filters, limit=query["limit"], cursor=query.get("cursor")
        )
        data = page_data(page, lambda e: event_data(e, performers.get(e.pk, [])))
        # Without date_from the list holds only events not started yet: it changes when the first one starts.
        starts = [e.starts_at.timestamp() for e in page.results]
        return data, (min(starts) if starts and "date_from" not in filters else None)

    return Route(cache.entry_key("events", sorted(query.items())), None, build)


def event_detail_route(request, *, event_id: str) -> Route:
    def build() -> bytes:
        event, performers = selectors.event_get(event_id=event_id)
        return encoded(event_data(event, performers))

    # The query is not read here: the same answer whatever it holds.
    return Route(cache.entry_key("event", event_id), None, build)


def section_list_route(request, *, event_id: str) -> Route:
    query = params(PageParamsSerializer, request)

    def build() -> bytes:
        page = selectors.section_list(event_id=event_id, limit=query["limit"], cursor=query.get("cursor"))
        return page_data(page, section_data)

    return Route(cache.entry_key("sections", event_id, sorted(query.items())), event_id, build)


def row_list_route(request, *, event_id: str, name: str) -> Route:
    query = params(PageParamsSerializer, request)

    def build() -> bytes:
        page = selectors.row_list(
            event_id=event_id, section_name=name, limit=query["limit"], cursor=query.get("cursor")
        )
        return page_data(page, row_data)

    return Route(cache.entry_key("rows", event_id, name, sorted(query.items())), event_id, build)


def if_none_match(header: str, etag: str) -> bool:
    """Does ``If-None-Match`` name ``etag``? (RFC 9110 13.1.2: weak comparison, ``*`` matches any.)"""
    if not header:
        return False
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == etag:
            return True
    return False


def respond(request: HttpRequest, page: cache.Page, *, livemode: bool) -> HttpResponse:
    """200 with the page's ``data`` in the envelope, or 304 when the client holds the current tag."""
    etag = page.etag(livemode=livemode)
    if if_none_match(request.META.get("HTTP_IF_NONE_MATCH", ""), etag):
        response = HttpResponseNotModified()
    else:
        # The request id and the instant: ASCII text, written as every other answer's meta is.
        meta = render_compact(envelope_meta(request))
        response = HttpResponse(
            b'{"success":true,"data":' + page.data + b',"meta":' + meta + b"}", content_type=CONTENT_TYPE
        )
    response["ETag"] = etag
    response["Cache-Control"] = CACHE_CONTROL
    return response


def error_response(error: api_errors.ApiError, request: HttpRequest) -> HttpResponse:
    """The envelope DRF's exception handler makes for ``error`` (config.api.exceptions)."""
    response = HttpResponse(
        json.dumps(error_body(error, request), separators=(",", ":")).encode(),
        status=error.status,
        content_type=CONTENT_TYPE,
    )
    for name, value in error_headers(error).items():
        response[name] = value
    return response


def _answer(request: HttpRequest, route_of: Callable[..., Route], header: str, kwargs: dict) -> HttpResponse:
    # Token first, then scope, then the query (as on every endpoint); the query is read first only to name
    # the answer's entries for the authentication's round trip.
    cache.send_unsent()
    try:
        route = route_of(request, **kwargs)
        invalid = None
    except Exception as exc:  # an invalid query: reported after the token and scope
        route, invalid = None, exc
    read = cache.read_keys(route.key, event_id=route.event_id) if route is not None else []
    # A catalog read never checks payment readiness: its round trip reads the session and the catalog alone.
    principal, _claims, found = bearer_authenticate(request, header, read=read, with_readiness=False)
    if SCOPE not in principal.scopes:
        raise api_errors.Forbidden(f"The token lacks the scope {SCOPE}.", details={"required_scope": SCOPE})
    if invalid is not None:
        raise invalid
    page = cache.page(route.key, route.build, event_id=route.event_id, found=found)
    return respond(request, page, livemode=principal.livemode)


def read_view(drf_view: Callable, route_of: Callable[..., Route]) -> Callable:
    """The catalog URL's view: :func:`_answer` for a GET with an ``Authorization`` header, ``drf_view`` for
    the rest."""

    def view(request: HttpRequest, **kwargs) -> HttpResponse:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if request.method != "GET" or not header:
            return drf_view(request, **kwargs)
        try:
            return _answer(request, route_of, header, kwargs)
        except Exception as exc:
            error = as_api_error(exc, {"request": request})
            if isinstance(error, api_errors.InternalError) and not isinstance(exc, api_errors.ApiError):
                raise  # Django's handler answers (the envelope, the error report)
            return error_response(error, request)

    # drf-spectacular and DRF's tooling find the view class here, as on any APIView's view.
    view.cls = drf_view.cls
    view.initkwargs = drf_view.initkwargs
    view.csrf_exempt = True
    # Its GETs take the short path of the middleware (config.api.routes), the rest the whole chain.
    return short_path(view, ("GET",))
