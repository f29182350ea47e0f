"""The metrics of the processes that are not web processes: each Celery worker, beat and the inbound SMTP
receiver serves Prometheus' text format on a port of its own (``METRICS_PORT``, set on its Procfile line).

Why a port per process rather than one shared directory read by the web process: a process that dies shows as
its target down (``up == 0``) instead of a silent gap in the sums; a process that restarts empties only its own
samples (a directory shared with gunicorn would be emptied by every web restart, or grow with every pid); and a
second host is more targets in the scrape configuration, nothing else.

A Celery worker counts in its pool's child processes, so every such process writes its samples to a private
multiprocess directory (prometheus-client's multiprocess mode), made fresh at start by :func:`prepare` (called
from the settings, before any metric exists; unless ``PROMETHEUS_MULTIPROC_DIR`` is set) and removed at exit; the exporter, a thread of the main process,
reads them all. The gauges (outbox, queues, payouts, staff queues) are computed by the web processes' /metrics
only, once per scrape: an exporter serves the counters of its own process.

Access is the web's rule (config.core.metrics): ``Authorization: Bearer <METRICS_TOKEN>`` when the token is set,
otherwise loopback only; the exporter listens on ``METRICS_BIND`` (127.0.0.1 unless set: 0.0.0.0 with a token
for a Prometheus on another machine). Anything else is a 404.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from celery.signals import beat_init, worker_ready

logger = logging.getLogger(__name__)

_started: ThreadingHTTPServer | None = None


def prepare(port: int) -> None:
    """With ``port`` set, this process and its children count into a multiprocess directory of their own."""
    if not port or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return  # no exporter, or a directory already chosen (a forked child, the operator's own)
    directory = tempfile.mkdtemp(prefix=f"partner-metrics-{port}-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # never from a forked child that happens to run the exit handlers
            shutil.rmtree(directory, ignore_errors=True)

    atexit.register(remove)


class _Handler(BaseHTTPRequestHandler):
    server_version = "partner-metrics"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        from config.core.metrics import CONTENT_TYPE_LATEST, exposition, metrics_allowed_headers

        allowed = self.path.split("?", 1)[0] == "/metrics" and metrics_allowed_headers(
            authorization=self.headers.get("Authorization", ""),
            proxied=any(self.headers.get(name) for name in ("X-Forwarded-For", "Forwarded", "X-Real-IP")),
            remote_addr=self.client_address[0],
        )
        if not allowed:
            self._answer(404, b"Not found.\n", "text/plain; charset=utf-8")
            return
        self._answer(200, exposition(gauges=False), CONTENT_TYPE_LATEST)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        pass  # one line per scrape would drown the process's own log


def start(*, port: int, bind: str) -> ThreadingHTTPServer | None:
    """Serve /metrics on ``bind``:``port`` from a daemon thread of this process (once per process)."""
    global _started
    if not port or _started is not None:
        return _started
    try:
        server = ThreadingHTTPServer((bind, port), _Handler)
    except OSError:
        # The process's own work goes on; its target shows down in Prometheus (BuybackProcessDown).
        logger.exception("metrics: cannot serve /metrics on %s:%s", bind, port)
        return None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics-exporter", daemon=True).start()
    _started = server
    logger.info("metrics: serving /metrics on %s:%s", bind, port)
    return server


def start_from_settings() -> ThreadingHTTPServer | None:
    from django.conf import settings

    return start(port=settings.METRICS_PORT, bind=settings.METRICS_BIND)


# Each worker and beat serve their own /metrics on METRICS_PORT: the worker once its pool runs (the pool's processes
# count, the main process serves), beat as it starts. The settings import this module in every process (``prepare``),
# so the hooks are connected before either signal is sent; the Celery app itself knows nothing of them.
@worker_ready.connect(weak=False)
def _worker_metrics_serve(**_kwargs) -> None:
    start_from_settings()


@beat_init.connect(weak=False)
def _beat_metrics_serve(**_kwargs) -> None:
    start_from_settings()
