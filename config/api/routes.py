"""The top of the middleware chain: a route that answers from stored bytes takes a short path, chosen by route.

A catalog read (``GET /v1/events…`` with a bearer token) reads a stored answer and writes nothing: of the
middleware every request passes, it needs the HTTP metrics, the request id, the retry of a lost database
connection (a page not stored yet is read from the database), the security headers, the host check and
``Content-Length`` (the common middleware: ``config.api.middleware.CommonMiddleware``) and ``X-Frame-Options``.
The chunked-body reader, the static files, the body limit, idempotency and the pages' middleware have nothing to
do for it. ``RouteMiddleware``, first in ``MIDDLEWARE``, resolves such a request's URL once and runs those in one
place, in the order and with the exception handling the chain gives them, then the view; the URL is not resolved
again. Their response hooks add what they add without Django's checks of each header (``config.api.headers``).
Every other request goes down the whole chain. The route of a path is kept per process (a bounded cache): a
catalog path is resolved once.

A view offers the short path with :func:`short_path` (the methods it serves so). At start-up the middleware
reads ``MIDDLEWARE``: the short path runs the metrics only when they are listed, and a middleware it does not
know after it turns the short path off. Which URLs may hold such a view is read from the URL patterns once per
URLconf (their literal prefix), so no other request pays for a resolution. A request that carries a body (a
``Content-Length`` or ``Transfer-Encoding``) takes the whole chain, whose body limits answer it.

Of Django's common middleware, a short-path request needs only the host check: its route resolved, so no
slash is appended, and the short path is off where ``DISALLOWED_USER_AGENTS`` or ``PREPEND_WWW`` is set. The
check's answer depends on the request's ``Host`` and ``X-Forwarded-Host`` alone, so the pairs it allowed are
kept per process (a bounded set, emptied when a setting changes): a host checked once is not checked again,
and one it refuses is refused each time (400, as Django's handler answers ``DisallowedHost``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.core.handlers.exception import response_for_exception
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import ResolverMatch, URLPattern, URLResolver, get_resolver
from django.urls.exceptions import Resolver404
from django.urls.resolvers import RoutePattern

from config.core import metrics
from config.core.dbretry import with_retry

from .headers import ResponseHooks
from .idempotency import META_KEY
from .middleware import ApiBodyLimitMiddleware, ChunkedBodyMiddleware, CommonMiddleware, with_request_id

SHORT_PATH_ATTRIBUTE = "short_path_methods"
SHORT_PATH_BODY_ATTRIBUTE = "short_path_body"
ROUTES_PATH = f"{__name__}.RouteMiddleware"
METRICS_PATH = "config.core.metrics.HttpMetricsMiddleware"
# What the short path runs itself, in the chain's order (the chunked-body reader and the body limit only for a
# body); it stays off unless MIDDLEWARE lists exactly these in this order, with nothing else but _SKIP between.
_RUN = (
    METRICS_PATH,
    "config.api.middleware.RequestIdMiddleware",
    "config.api.middleware.ChunkedBodyMiddleware",
    "config.core.dbretry.RetryOnLostConnectionMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.api.middleware.ApiBodyLimitMiddleware",
    "config.api.middleware.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
# What has nothing to do on the short path: static files are never under /v1/, idempotency keeps an answer
# only for a request with an Idempotency-Key (which takes the chain), and the pages' middleware skips /v1/.
_SKIP = {
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "partners.idempotency.gate.IdempotencyMiddleware",
    "config.core.pages.PagesMiddleware",
}


def short_path(view: Callable, methods: tuple[str, ...] = ("GET",), *, body: bool = False) -> Callable:
    """Mark ``view``'s requests of ``methods`` for the short path: without a body (a read from stored bytes),
    or with ``body`` (a plain view's JSON body: read and limited as the chain does, and taken only without an
    ``Idempotency-Key``, whose claim the chain keeps)."""
    setattr(view, SHORT_PATH_ATTRIBUTE, frozenset(methods))
    setattr(view, SHORT_PATH_BODY_ATTRIBUTE, body)
    return view


def _prefixes(resolver: URLResolver) -> tuple[frozenset[str], tuple[str, ...]]:
    """The exact paths and the path prefixes under which a short-path view's pattern may match."""
    exact: set[str] = set()
    prefixes: set[str] = set()

    def walk(patterns, route: str | None) -> None:
        for entry in patterns:
            pattern = entry.pattern
            # Only plain routes: a regular expression's literal prefix is not read (its views take the chain).
            part = str(pattern) if isinstance(pattern, RoutePattern) and route is not None else None
            here = None if part is None else route + part
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, here)
            elif (
                isinstance(entry, URLPattern)
                and here is not None
                and getattr(entry.callback, SHORT_PATH_ATTRIBUTE, None)
            ):
                if "<" in here:
                    prefixes.add("/" + here[: here.index("<")])
                else:
                    exact.add("/" + here)

    walk(resolver.url_patterns, "")
    return frozenset(exact), tuple(sorted(prefixes))


class RouteMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        listed = list(settings.MIDDLEWARE)
        after = listed[listed.index(ROUTES_PATH) + 1 :] if ROUTES_PATH in listed else listed
        atomic = any(db.get("ATOMIC_REQUESTS") for db in settings.DATABASES.values())
        self.metrics = METRICS_PATH in after
        run = [path for path in _RUN if path != METRICS_PATH or self.metrics]
        self.enabled = (
            not atomic
            and all(path in _RUN or path in _SKIP for path in after)
            and [path for path in after if path in _RUN] == run
        )
        # Their hooks, called as the chain calls them (never their own get_response).
        self.security = SecurityMiddleware(get_response)
        self.common = CommonMiddleware(get_response)
        self.xframe = XFrameOptionsMiddleware(get_response)
        self.hooks = ResponseHooks(self.xframe, self.common, self.security)
        # The common middleware's request hook is the host check alone unless these ask for more.
        self.host_check_only = not settings.DISALLOWED_USER_AGENTS and not settings.PREPEND_WWW
        # A body's readers, in their places: the chunked body before the retry, the limit after security.
        self.chunked = ChunkedBodyMiddleware(lambda r: with_retry(r, self._secured_body))
        self.body_limit = ApiBodyLimitMiddleware(self._common)
        self._tables: dict[int, tuple[URLResolver, frozenset[str], tuple[str, ...]]] = {}

    def _table(self, request: HttpRequest) -> tuple[URLResolver, frozenset[str], tuple[str, ...]]:
        resolver = get_resolver(getattr(request, "urlconf", None))
        table = self._tables.get(id(resolver))
        if table is None or table[0] is not resolver:
            table = (resolver, *_prefixes(resolver))
            self._tables[id(resolver)] = table
        return table

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self.enabled:
            resolver, exact, prefixes = self._table(request)
            path = request.path_info
            if path in exact or path.startswith(prefixes):
                match = _resolved(resolver, path)
                view = match.func if match is not None else None
                if request.method in getattr(view, SHORT_PATH_ATTRIBUTE, ()):
                    if not getattr(view, SHORT_PATH_BODY_ATTRIBUTE, False):
                        if _bodiless(request):
                            request.resolver_match = match
                            return self._short(request, self._read)
                    elif META_KEY not in request.META:
                        request.resolver_match = match
                        return self._short(request, self._with_body)
        return self.get_response(request)

    # --- the short path: each step where the chain holds it --------------------------------------------
    def _short(self, request: HttpRequest, inner: Callable[[HttpRequest], HttpResponse]) -> HttpResponse:
        started = time.perf_counter()
        response = with_request_id(request, inner)
        if self.metrics:
            metrics.http_observe(request, response, started)
        return response

    def _read(self, request: HttpRequest) -> HttpResponse:
        return with_retry(request, self._secured)

    def _with_body(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.chunked(request)
        except Exception as exc:
            return response_for_exception(request, exc)

    def _secured(self, request: HttpRequest) -> HttpResponse:
        response = self.security.process_request(request) or self._common(request)
        return self.hooks.secured(request, response)

    def _secured_body(self, request: HttpRequest) -> HttpResponse:
        response = self.security.process_request(request) or self.body_limit(request)
        return self.hooks.secured(request, response)

    def _common(self, request: HttpRequest) -> HttpResponse:
        try:
            response = self._common_request(request) or self._framed(request)
            return self.hooks.common_done(request, response)
        except Exception as exc:
            return response_for_exception(request, exc)

    def _common_request(self, request: HttpRequest) -> HttpResponse | None:
        """The common middleware's request hook for a resolved route: the host check, once per host."""
        if not self.host_check_only:
            return self.common.process_request(request)
        meta = request.META
        if "HTTP_HOST" not in meta:  # the host is read from the server's name and port: checked each time
            return self.common.process_request(request)
        key = (meta["HTTP_HOST"], meta.get("HTTP_X_FORWARDED_HOST"))
        if key not in _allowed_hosts:
            request.get_host()  # raises DisallowedHost
            if len(_allowed_hosts) < ALLOWED_HOSTS_KEPT:
                _allowed_hosts.add(key)
        return None

    def _framed(self, request: HttpRequest) -> HttpResponse:
        match = request.resolver_match
        try:
            response = match.func(request, *match.args, **match.kwargs)
            if hasattr(response, "render") and callable(response.render):
                response = response.render()  # DRF's answer, as Django's handler renders it
        except Exception as exc:
            response = response_for_exception(request, exc)
        return self.hooks.framed(request, response)


# The (Host, X-Forwarded-Host) pairs the host check allowed, in this process.
ALLOWED_HOSTS_KEPT = 64
_allowed_hosts: set[tuple[str, str | None]] = set()


@receiver(setting_changed)
def _forget_hosts(**_) -> None:
    # ALLOWED_HOSTS, DEBUG and the forwarded-host settings decide the check: any change starts it afresh.
    _allowed_hosts.clear()


@lru_cache(maxsize=4096)
def _resolved(resolver: URLResolver, path: str) -> ResolverMatch | None:
    """The route of a path under a short-path prefix, resolved once per path and process (``None``: none).
    A match holds only what the URLconf and the path decide, and no view changes it."""
    try:
        return resolver.resolve(path)
    except Resolver404:
        return None


def _bodiless(request: HttpRequest) -> bool:
    meta = request.META
    return "HTTP_TRANSFER_ENCODING" not in meta and meta.get("CONTENT_LENGTH") in (None, "", "0")
