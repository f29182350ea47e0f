"""What Django does around every request, without the steps that have nothing to do in this service.

Django connects receivers to ``request_started`` and ``request_finished`` that every request pays for, the
partner API's reads from stored bytes included. Each looks up per-thread state through asgiref's ``Local`` (a
lock, a context variable and a failed attribute lookup per access), and two of them do nothing here:

- ``close_caches`` calls ``close()`` on every cache the thread opened. The configured backends (Django's Redis
  backend and ours built on it) inherit ``BaseCache.close``, which does nothing: the Redis connections are kept
  in their pools across requests. It stays connected while any configured backend closes something of its own
  (memcached's, say), decided from ``CACHES`` at start-up and again whenever the setting changes.
- ``reset_urlconf`` forgets the URLconf a request may have set for its thread. Every request sets it again before
  it resolves anything (``BaseHandler.get_response`` sets ``ROOT_URLCONF``, or the request's own ``urlconf``),
  and nothing outside a request runs on a web worker's request thread, so forgetting it served nothing.

Measured on a catalog read answered ``304`` (``python -m bench.request_cpu --instructions``), the two were about
an eighth of the user-space instructions of the whole request, Django's handler and the Redis round trip included.

The database's two receivers do their work, but each finds the thread's connections through
``connections.all(initialized_only=True)``: two lookups in asgiref's ``Local`` per database alias, each asking
asyncio for a running loop and catching the ``RuntimeError`` a sync thread gets. Three such passes a request
(``reset_queries`` and ``close_old_connections`` at its start, ``close_old_connections`` at its end), with the
dispatch of three receivers, were about a tenth of a ``304``'s CPU in-process. In their place, for the requests
the WSGI and ASGI handlers send (the servers'), one receiver per signal does the same work in one pass over the
connections this thread has opened, which ``connection_created`` records as each one opens
(:func:`thread_connections`): at a request's start each connection's query log is emptied and the connection
closed if it is unusable or past its age (Django's two, in their order), at its end it is closed if unusable or
past its age, which returns a pooled connection to its pool. A connection that never opened has no log and nothing
to close, so the pass does what Django's does.

Django's test client sends the signals as its own handler (``ClientHandler``), and takes ``close_old_connections``
off around each request so that the test's transaction survives; it puts Django's receiver back afterwards. So
Django's receivers are taken off for every sender here, and these run for the servers' handlers only: a test that
calls a server's handler itself while keeping its transaction takes these off too (:data:`SERVER_RECEIVERS`).
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core import signals
from django.core.cache import close_caches
from django.core.cache.backends.base import BaseCache
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import reset_urlconf
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import setting_changed
from django.db import close_old_connections, connections, reset_queries
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver
from django.utils.module_loading import import_string

# The handlers a server runs the service under: they send the request signals with their class as sender.
SERVER_HANDLERS = (WSGIHandler, ASGIHandler)


def caches_close_anything() -> bool:
    """Whether a configured cache backend does something when closed (its ``close`` is not ``BaseCache``'s)."""
    for params in settings.CACHES.values():
        backend = import_string(params["BACKEND"])
        if backend.close is not BaseCache.close:
            return True
    return False


# The connections each thread has opened, by identity (a thread holds one per database alias it used).
_opened = threading.local()


def thread_connections() -> list[BaseDatabaseWrapper]:
    """The database connections this thread has opened (at least once; open now or closed since)."""
    held = _opened.__dict__.get("connections")
    return list(held.values()) if held else []


def _record(*, connection: BaseDatabaseWrapper, **_) -> None:
    """``connection_created``'s receiver: keep the connection in its thread's list."""
    _opened.__dict__.setdefault("connections", {})[id(connection)] = connection


def _request_started(**_) -> None:
    # Django's reset_queries, then its close_old_connections.
    for connection in thread_connections():
        connection.queries_log.clear()
        connection.close_if_unusable_or_obsolete()


def _request_finished(**_) -> None:
    # Django's close_old_connections.
    for connection in thread_connections():
        connection.close_if_unusable_or_obsolete()


# (signal, receiver, sender) for each receiver connected here for the servers' handlers.
SERVER_RECEIVERS = [
    *((signals.request_started, _request_started, handler) for handler in SERVER_HANDLERS),
    *((signals.request_finished, _request_finished, handler) for handler in SERVER_HANDLERS),
]


def install() -> None:
    """Take off the receivers with nothing to do, and put the database's in one pass per signal for the
    servers' handlers (once the apps are ready)."""
    signals.request_finished.disconnect(reset_urlconf)
    _close_caches_if_needed()
    connection_created.connect(_record, dispatch_uid="request-cycle-opened")
    # A connection this thread opened before the receiver above was connected.
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            _record(connection=connection)
    signals.request_started.disconnect(reset_queries)
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    for signal, function, sender in SERVER_RECEIVERS:
        signal.connect(function, sender=sender)


def _close_caches_if_needed() -> None:
    if caches_close_anything():
        signals.request_finished.connect(close_caches)
    else:
        signals.request_finished.disconnect(close_caches)


@receiver(setting_changed)
def _caches_changed(*, setting: str, **_) -> None:
    if setting == "CACHES":
        _close_caches_if_needed()
