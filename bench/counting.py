"""Counted, not estimated: the SQL statements, database transactions and Redis round trips of each request.

Installed only when ``BENCH_COUNT=1`` (bench/settings.py adds the middleware): ``make bench`` sets it on the
one server of its counting pass (bench/run.py), never on the servers it times. Every response then carries
``X-Bench-Queries``, ``X-Bench-Transactions`` and ``X-Bench-Redis``; the counting pass (bench/lua/bench.lua,
``count=1``) sums them.

- SQL statements: Django's ``connection.execute_wrapper`` sees every statement the request runs.
- Transactions: each commit or rollback of the request's connection. psycopg sends ``BEGIN`` and ``COMMIT``
  as round trips of their own, so the database round trips of a request are statements + 2 × transactions.
- Redis round trips: every ``send_packed_command`` of redis-py, which a single command and a whole pipeline
  each make once; the cache, the rate limiter and Celery's publish (kombu uses redis-py) all go through it.
"""

from __future__ import annotations

import threading

from django.db import connection

_local = threading.local()


class _Counts:
    __slots__ = ("queries", "redis", "transactions")

    def __init__(self) -> None:
        self.queries = 0
        self.transactions = 0
        self.redis = 0


def _current() -> _Counts | None:
    return getattr(_local, "counts", None)


def _patch() -> None:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from redis.connection import AbstractConnection

    if getattr(AbstractConnection, "_bench_counted", False):
        return
    send = AbstractConnection.send_packed_command

    def send_packed_command(self, command, check_health=True):
        counts = _current()
        if counts is not None:
            counts.redis += 1
        return send(self, command, check_health)

    AbstractConnection.send_packed_command = send_packed_command
    AbstractConnection._bench_counted = True

    for name in ("_commit", "_rollback"):
        original = getattr(BaseDatabaseWrapper, name)

        def ending(self, _original=original):
            counts = _current()
            if counts is not None and self.connection is not None:
                counts.transactions += 1
            return _original(self)

        setattr(BaseDatabaseWrapper, name, ending)


def _count_query(execute, sql, params, many, context):
    counts = _current()
    if counts is not None:
        counts.queries += 1
    return execute(sql, params, many, context)


class CountingMiddleware:
    def __init__(self, get_response):
        _patch()
        self.get_response = get_response

    def __call__(self, request):
        counts = _local.counts = _Counts()
        try:
            with connection.execute_wrapper(_count_query):
                response = self.get_response(request)
        finally:
            _local.counts = None
        response["X-Bench-Queries"] = str(counts.queries)
        response["X-Bench-Transactions"] = str(counts.transactions)
        response["X-Bench-Redis"] = str(counts.redis)
        return response
