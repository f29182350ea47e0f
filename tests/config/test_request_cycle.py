"""Django's receivers around every request (config/core/request_cycle.py): the two with nothing to do here are
off, a cache backend that closes something puts its receiver back, and the database's two do their work in one
pass per signal for the servers' handlers."""

import threading
import time

import pytest
from django.conf import settings
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.handlers.base import reset_urlconf
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections, connection, reset_queries
from django.test import Client, RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import get_urlconf, set_urlconf

from config.core import request_cycle
from config.core.request_cycle import SERVER_RECEIVERS, caches_close_anything, thread_connections


def _receivers(signal) -> list:
    return [ref() for _, ref, *_ in signal.receivers]


def _connected_for(signal, sender) -> list:
    """The receivers ``signal`` calls for ``sender`` (as connected: an error reporter's wrapper taken off)."""
    return [getattr(function, "__wrapped__", function) for function in signal._live_receivers(sender)[0]]


@pytest.fixture
def server_state():
    """The receivers as a server's process holds them: Django's test client puts ``close_old_connections``
    back after each of its requests, so it is taken off here again for the test (and put back after)."""
    django_receivers = [
        (signals.request_started, reset_queries),
        (signals.request_started, close_old_connections),
        (signals.request_finished, close_old_connections),
    ]
    held = [(signal, function) for signal, function in django_receivers if function in _receivers(signal)]
    for signal, function in django_receivers:
        signal.disconnect(function)
    yield
    for signal, function in held:
        signal.connect(function)


def _serve(path: str = "/v1/events") -> str:
    """One request the way gunicorn makes it: Django's WSGI handler, the answer read, then closed. Returns the
    status line."""
    environ = RequestFactory().get(path).environ
    status = []
    response = WSGIHandler()(environ, lambda line, headers: status.append(line))
    b"".join(response)
    response.close()
    return status[0]


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


def test_a_server_handler_request_runs_one_database_receiver_per_signal(server_state):
    for handler in request_cycle.SERVER_HANDLERS:
        started = _connected_for(signals.request_started, handler)
        finished = _connected_for(signals.request_finished, handler)
        assert request_cycle._request_started in started
        assert request_cycle._request_finished in finished
        assert reset_queries not in started and close_old_connections not in started + finished
    # Django's test client's handler is not a server's: its requests leave the test's connection alone.
    assert request_cycle._request_started not in _connected_for(
        signals.request_started, type(Client().handler)
    )
    assert {sender for _signal, _function, sender in SERVER_RECEIVERS} == set(request_cycle.SERVER_HANDLERS)


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
def test_a_pooled_connection_goes_back_to_its_pool_after_a_request(server_state):
    # Outside the test client (which keeps the connection for the test's transaction), the way gunicorn calls
    # the application: the connection a request opened is closed (returned to its pool) when it ends.
    connection.ensure_connection()
    assert connection.connection is not None
    assert connection in thread_connections()
    _serve()
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_request_itself_opens_is_closed_when_it_ends(server_state):
    connection.close()
    during = []

    def in_the_request(sender, **kwargs):
        during.append(connection.connection is not None)

    # Connected after the service's receiver for this sender: it sees what that one left.
    signals.request_finished.connect(in_the_request, sender=WSGIHandler)
    try:
        with CaptureQueriesContext(connection) as queries:
            status = _serve("/readyz")  # the readiness check reads the database
    finally:
        signals.request_finished.disconnect(in_the_request, sender=WSGIHandler)
    assert status.startswith("200")
    assert [q["sql"] for q in queries.captured_queries] == ["SELECT 1"]
    assert during == [False]
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_at_a_request_start_the_query_log_is_emptied_and_an_old_connection_closed(server_state):
    connection.ensure_connection()
    connection.force_debug_cursor = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        assert len(connection.queries_log) == 1
        logs = []

        def at_start(sender, **kwargs):
            logs.append((len(connection.queries_log), connection.connection))

        # Connected after the service's receiver: it sees what that one left.
        signals.request_started.connect(at_start, sender=WSGIHandler)
        try:
            connection.close_at = time.monotonic() - 1  # past its age
            _serve("/v1/_no_such_path")
        finally:
            signals.request_started.disconnect(at_start, sender=WSGIHandler)
        assert logs == [(0, None)]
    finally:
        connection.force_debug_cursor = False


@pytest.mark.django_db(transaction=True)
def test_a_connection_left_in_a_transaction_is_dropped_at_the_request_end(server_state):
    # Django's rule: a connection whose autocommit was not restored is not trusted with the next request.
    connection.ensure_connection()
    connection.set_autocommit(False)
    _serve()
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_another_threads_connection_is_left_alone(server_state):
    opened = threading.Event()
    done = threading.Event()
    state = {}

    def other():
        from django.db import connection as other_connection

        other_connection.ensure_connection()
        state["mine"] = thread_connections()
        opened.set()
        done.wait(10)
        state["open_after"] = other_connection.connection is not None
        other_connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert opened.wait(10)
        assert state["mine"] and all(c is not connection for c in state["mine"])
        _serve()
    finally:
        done.set()
        thread.join(10)
    assert state["open_after"] is True
