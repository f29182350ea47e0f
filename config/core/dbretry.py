"""One retry for a request that met a dead database connection before writing anything.

psycopg's pool checks a connection before handing it out (``check`` in ``DATABASES.OPTIONS.pool``), so
after a failover, a restart or an idle cut the dead ones are dropped there. A connection can still die
between the check and the request's first statement; then the statement fails with OperationalError or
InterfaceError and the request would answer 500. If no statement that writes had succeeded in the
request, nothing was changed: the dead connection is discarded and the request runs once more on a fresh
one. A request that had written something is never replayed (its transaction may have committed).
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse

from .retrying import DB_ERRORS

logger = logging.getLogger(__name__)

_READS = ("SELECT", "SHOW", "SET", "SAVEPOINT", "RELEASE", "ROLLBACK")
# Bodies the retry can replay from memory (read once, before the first attempt). Multipart bodies carry
# the order PDF, streamed to disk and never buffered: those requests are not replayed.
_REPLAYABLE_TYPES = ("application/json", "application/x-www-form-urlencoded")


class _Statements:
    """Execute wrapper: did a write succeed, did the connection die, during this request?"""

    def __init__(self) -> None:
        self.wrote = False
        self.lost = False

    def __call__(self, execute, sql, params, many, context):
        try:
            result = execute(sql, params, many, context)
        except DB_ERRORS:
            if not _usable():
                self.lost = True
            raise
        if not self.wrote and not str(sql).lstrip().upper().startswith(_READS):
            self.wrote = True
        return result


def _usable() -> bool:
    raw = connection.connection
    return raw is not None and not getattr(raw, "closed", False) and not getattr(raw, "broken", False)


def _replayable(request: HttpRequest) -> bool:
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return True
    if not request.content_type.startswith(_REPLAYABLE_TYPES):
        return False
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and length > limit:
        return False  # answered 413 before anything is read
    request.body  # noqa: B018 — buffer it now, so a second attempt reads the same bytes
    return True


_local = threading.local()


class RetryOnLostConnectionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return with_retry(request, self.get_response)


def with_retry(request: HttpRequest, get_response) -> HttpResponse:
    """``get_response(request)``, once more on a fresh connection if the first attempt lost its connection
    before any write and failed (the middleware, and the reads' own path: config/api/routing.py)."""
    if not _replayable(request) or getattr(_local, "active", False):
        return get_response(request)
    statements = _Statements()
    _local.active = True
    try:
        with connection.execute_wrapper(statements):
            response = get_response(request)
    finally:
        _local.active = False
    if not (statements.lost and not statements.wrote and response.status_code >= 500):
        return response
    logger.warning("database connection lost before any write; retrying the request once")
    _discard_connection()
    if hasattr(request, "ratelimit"):
        del request.ratelimit
    return get_response(request)


def _discard_connection() -> None:
    """Drop the dead connection (the pool discards a broken one it gets back), then have the pool check
    its idle ones: what killed this connection (a failover, a restart) most likely killed them too, and
    the second attempt must not take another dead one."""
    try:
        connection.close()
    except Exception:
        logger.debug("closing the dead connection failed", exc_info=True)
        connection.connection = None
    pool = getattr(connection, "pool", None)
    if pool is not None:
        try:
            pool.check()
        except Exception:
            logger.warning("checking the pooled connections failed", exc_info=True)
