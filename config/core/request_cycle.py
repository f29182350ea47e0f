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

The receivers that do work stay as Django connects them: ``close_old_connections`` (a pooled database connection
goes back to its pool at the end of a request; Django's test client takes this one off around its requests) and
``reset_queries``.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signals
from django.core.cache import close_caches
from django.core.cache.backends.base import BaseCache
from django.core.handlers.base import reset_urlconf
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string


def caches_close_anything() -> bool:
    """Whether a configured cache backend does something when closed (its ``close`` is not ``BaseCache``'s)."""
    for params in settings.CACHES.values():
        backend = import_string(params["BACKEND"])
        if backend.close is not BaseCache.close:
            return True
    return False


def install() -> None:
    """Take off the receivers with nothing to do (once the apps are ready)."""
    signals.request_finished.disconnect(reset_urlconf)
    _close_caches_if_needed()


def _close_caches_if_needed() -> None:
    if caches_close_anything():
        signals.request_finished.connect(close_caches)
    else:
        signals.request_finished.disconnect(close_caches)


@receiver(setting_changed)
def _caches_changed(*, setting: str, **_) -> None:
    if setting == "CACHES":
        _close_caches_if_needed()
