"""gunicorn settings of the production shape (``gunicorn -c config/deploy/gunicorn_conf.py config.wsgi``).

The bind address, workers and threads come from the command line (Procfile, config/deploy/serve.py); this file
holds what every deployment shares: the access log, which never writes a credential, and the limits.
"""

import os
from pathlib import Path

from gunicorn.glogging import Logger

from config.core.redaction import could_carry_credential, redact
from config.deploy import early_errors

accesslog = "-"
# The combined format plus the request id the API answers with (X-Request-ID), so a partner's request
# id finds its access-log line.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(M)sms %({x-request-id}o)s'
# gunicorn's own header limits (its defaults, written out): a request line over 4,094 bytes, a header over
# 8,190 bytes or more than 100 headers is refused before the application runs.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190
timeout = 30
graceful_timeout = 20
# Each worker touches its heartbeat file between requests (the master's check of the timeout above): in memory,
# not on a disk-backed /tmp where a busy disk can stall the worker (gunicorn's own advice for containers).
_IN_MEMORY = "/dev/shm"  # noqa: S108 - gunicorn makes its file there with mkstemp (0600) and unlinks it at once
if os.path.isdir(_IN_MEMORY):
    worker_tmp_dir = _IN_MEMORY
# What gunicorn refuses itself (over these limits, a malformed request) is answered in the API's envelope.
early_errors.install()

# The application already strips credentials from the environ gunicorn logs from (config/wsgi.py); the
# logger below does it again for every atom, the request headers a format may name included.
_REDACTED = "[redacted]"
_SECRET_HEADERS = ("{authorization}i", "{cookie}i", "{proxy-authorization}i", "{x-api-key}i")


class RedactingLogger(Logger):
    """gunicorn's logger, with credentials removed from every access-log atom (request line, query
    string, referer, raw URI, and the Authorization/Cookie headers a format may name)."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        for key, value in atoms.items():
            if isinstance(value, str) and could_carry_credential(value):
                atoms[key] = redact(value)
        for key in _SECRET_HEADERS:
            if key in atoms:
                atoms[key] = _REDACTED
        return atoms


logger_class = RedactingLogger


# --- Prometheus, multiprocess (config/core/metrics.py) -----------------------------------------------------
# With PROMETHEUS_MULTIPROC_DIR set, every worker writes its samples there and /metrics reads them all. The
# directory starts empty at each start of the server (samples of a previous run would add up), and a worker
# that exits is marked dead so its live gauges leave the sum.
def on_starting(server) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()


def child_exit(server, worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
