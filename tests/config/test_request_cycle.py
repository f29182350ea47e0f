"""Django's receivers around every request (config/core/request_cycle.py): the two with nothing to do here are
off, the ones that do work stay, and a cache backend that closes something puts its receiver back."""

import pytest
from django.conf import settings
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.handlers.base import reset_urlconf
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections, connection, reset_queries
from django.test import Client, RequestFactory, override_settings
from django.urls import get_urlconf, set_urlconf

from config.core.request_cycle import caches_close_anything


def _receivers(signal) -> list:
    return [ref() for _, ref, *_ in signal.receivers]


class ClosingCache(LocMemCache):
    """A backend whose ``close`` does something, as memcached's does."""

    closed = 0

    def close(self, **kwargs):
        type(self).closed += 1


CLOSING_CACHES = {"default": {"BACKEND": f"{__name__}.ClosingCache"}}


def test_the_service_caches_close_nothing_so_their_receiver_is_off():
    assert not caches_close_anything()
    finished = _receivers(signals.request_finished)
    assert close_caches not in finished
    assert reset_urlconf not in finished
    # The receivers that do work are Django's, as it connects them.
    assert close_old_connections in finished
    assert close_old_connections in _receivers(signals.request_started)
    assert reset_queries in _receivers(signals.request_started)


@pytest.mark.django_db
def test_a_backend_that_closes_something_is_closed_after_each_request():
    ClosingCache.closed = 0
    with override_settings(CACHES=CLOSING_CACHES):
        assert caches_close_anything()
        assert close_caches in _receivers(signals.request_finished)
        caches["default"].get("opened")
        Client().get("/v1/events")
        assert ClosingCache.closed == 1
    assert close_caches not in _receivers(signals.request_finished)
    assert reset_urlconf not in _receivers(signals.request_finished)


@pytest.mark.django_db
def test_a_request_resolves_with_the_root_urlconf_whatever_the_thread_held_before(client):
    # What a request that set its own urlconf would leave behind on its thread, now that nothing forgets it.
    set_urlconf("tests.config.urls_probe")
    try:
        response = client.get("/v1/_boom")
        assert response.status_code == 404
        # The request set the root URLconf for its thread, and it is left there until the next request sets it.
        assert get_urlconf() == settings.ROOT_URLCONF
    finally:
        set_urlconf(None)


@pytest.mark.django_db(transaction=True)
def test_a_pooled_connection_goes_back_to_its_pool_after_a_request():
    # Outside the test client (which keeps the connection for the test's transaction), the way gunicorn calls
    # the application: the connection a request opened is closed (returned to its pool) when it ends.
    environ = RequestFactory().get("/v1/events").environ
    handler = WSGIHandler()
    connection.ensure_connection()
    assert connection.connection is not None
    response = handler(environ, lambda status, headers: None)
    b"".join(response)
    response.close()
    assert connection.connection is None
