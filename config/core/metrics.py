"""Prometheus metrics: ``GET /metrics``, the HTTP/database/cache metrics and the service's own counters.

HTTP, database and cache metrics are django-prometheus' (``django_http_*``, ``django_db_*``,
``django_cache_*``), with one change: requests are labelled by their URL pattern (``v1/orders/<str:order_id>``),
never by the raw path, so no label carries an id. The service's own metrics are prefixed ``buyback_``; the
counters live here so that the order and webhook services (low layers) can count, the gauges are computed at
scrape time by collectors the top layer registers (``payouts/backoffice/metrics.py``, through :func:`gauges_register`).

Under gunicorn with several processes, ``PROMETHEUS_MULTIPROC_DIR`` names a directory every process writes its
samples to (prometheus-client's multiprocess mode); a scrape of any process reads them all. Without it (one
process: the tests) the process's own registry is served.

Access (``metrics_allowed``): ``Authorization: Bearer <METRICS_TOKEN>`` when ``METRICS_TOKEN`` is set; otherwise a
request from loopback that carries no proxy header. Anything else is the site's ordinary 404.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time

from django.conf import settings
from django.db import transaction
from django.db.backends.signals import connection_created
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django_prometheus import middleware as django_prometheus_metrics
from django_prometheus.db import errors_total, execute_total, query_duration_seconds
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

# No ``*_created`` timestamp series beside every counter: nothing here reads them, and they double the output.
disable_created_metrics()

# --- the service's counters ------------------------------------------------------------------------------
ORDERS_CREATED = Counter("buyback_orders_created", "Live orders created (counted on commit).")
ORDER_TRANSITIONS = Counter(
    "buyback_order_transitions",
    "Live order status changes (counted on commit), by new status and machine reason ('' when none).",
    ["to_status", "reason"],
)
WEBHOOK_OUTCOMES = ("succeeded", "failed", "timeout", "refused")
WEBHOOK_ATTEMPTS = Counter(
    "buyback_webhook_attempts",
    "Webhook attempts by outcome: succeeded (2xx), failed (any other answer or error), timeout (no complete "
    "answer in time), refused (no connection: refused, unreachable, or a target the SSRF guard refuses).",
    ["outcome"],
)
for _outcome in WEBHOOK_OUTCOMES:  # every outcome is shown from the first scrape, at 0
    WEBHOOK_ATTEMPTS.labels(outcome=_outcome)


def order_created_count(*, livemode: bool) -> None:
    """Count a created order once its transaction commits (live mode only)."""
    if livemode:
        transaction.on_commit(ORDERS_CREATED.inc)


def order_transition_count(*, livemode: bool, to_status: str, reason: str | None) -> None:
    """Count a status change once its transaction commits (live mode only)."""
    if livemode:
        child = ORDER_TRANSITIONS.labels(to_status=to_status, reason=reason or "")
        transaction.on_commit(child.inc)


def webhook_attempt_count(outcome: str) -> None:
    WEBHOOK_ATTEMPTS.labels(outcome=outcome).inc()


# --- gauges computed at scrape time ----------------------------------------------------------------------
# Collectors registered by the apps that own the data (never sampled into the multiprocess files: every
# process computes the same figures, from the database, when scraped).
GAUGES = CollectorRegistry(auto_describe=False)


def gauges_register(collector) -> None:
    if collector not in GAUGES._collector_to_names:
        GAUGES.register(collector)


# --- HTTP --------------------------------------------------------------------------------------------------
_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"))
_HTTP = django_prometheus_metrics.Metrics.get_instance()


def _route(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "<unresolved>"
    return match.route or match.view_name or "<unnamed view>"


class HttpMetricsMiddleware:
    """First in the stack, so its latency covers every other middleware: per request one observation of
    django-prometheus' ``django_http_requests_latency_seconds_by_view_method`` histogram and one count of its
    ``django_http_responses_total_by_status_view_method`` counter, both labelled by URL pattern (the route),
    never the raw path. django-prometheus' own pair of middlewares updates a dozen metrics per request (body
    sizes, charsets, transports); these two answer rates, errors and latency per route at a fraction of the
    cost on the hot catalog paths."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        http_observe(request, response, started)
        return response


def http_observe(request: HttpRequest, response: HttpResponse, started: float) -> None:
    """The request's latency since ``started`` (``time.perf_counter()``) and its answer's status, by route (the
    metrics middleware, and the reads' own path: config/api/routing.py)."""
    method = request.method if request.method in _METHODS else "<invalid method>"
    route = _route(request)
    key = (route, method, response.status_code)
    series = _HTTP_SERIES.get(key)
    if series is None:
        series = _HTTP_SERIES[key] = (
            _HTTP.requests_latency_by_view_method.labels(view=route, method=method),
            _HTTP.responses_by_status_view_method.labels(status=str(key[2]), view=route, method=method),
        )
    series[0].observe(time.perf_counter() - started)
    series[1].inc()


# The labelled series of each (route, method, status) seen: ``labels()`` checks and looks them up under a lock
# on every call. Bounded: routes are the URL patterns, methods and statuses are HTTP's.
_HTTP_SERIES: dict[tuple[str, str, int], tuple] = {}


# --- database ----------------------------------------------------------------------------------------------
def _timed_execute(execute, sql, params, many, context):
    alias = context["connection"].alias
    vendor = context["connection"].vendor
    execute_total.labels(alias, vendor).inc()
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    except Exception as exc:
        errors_total.labels(alias, vendor, type(exc).__name__).inc()
        raise
    finally:
        query_duration_seconds.labels(alias, vendor).observe(time.perf_counter() - started)


def _instrument_connection(sender, connection, **kwargs) -> None:
    # First in the list (the outermost): a connection opened inside ``with connection.execute_wrapper(w)``
    # must leave that block's own ``pop()`` removing ``w``, not this one.
    if _timed_execute not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, _timed_execute)


def database_metrics_connect() -> None:
    """django-prometheus' database metrics (statements, errors, durations) through an execute wrapper on
    every connection, whatever the engine (its own engines would replace the configured ones)."""
    connection_created.connect(_instrument_connection, dispatch_uid="metrics-database")


# --- the view ----------------------------------------------------------------------------------------------
_PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def metrics_allowed_headers(*, authorization: str, proxied: bool, remote_addr: str) -> bool:
    """The access rule, for /metrics here and for the other processes' exporters (config/deploy/exporter.py)."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
    if proxied:
        return False  # passed a proxy (nginx adds X-Forwarded-For): not this machine's scraper
    return _is_loopback(remote_addr)


def metrics_allowed(request: HttpRequest) -> bool:
    return metrics_allowed_headers(
        authorization=request.META.get("HTTP_AUTHORIZATION", ""),
        proxied=any(request.META.get(name) for name in _PROXY_HEADERS),
        remote_addr=request.META.get("REMOTE_ADDR", ""),
    )


def exposition(*, gauges: bool = True) -> bytes:
    """Every sample of every process (multiprocess mode) or of this one, then the scrape-time gauges (the web
    processes' /metrics only: the other processes' exporters leave them out, so they are computed once)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    return body + generate_latest(GAUGES) if gauges else body


@never_cache
def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD") or not metrics_allowed(request):
        raise Http404("No page here.")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
