"""docs/partners/conventions.md "Conditional requests" and docs/architecture.md: a version the shared cache lost
(Redis restarted with nothing on disk, the event version's expiry, an eviction) is replaced by a fresh random
one, so a tag answered before never matches again: the next read after the loss is the full 200 with the
current quantities."""

import time

import pytest
from django.core.cache import cache

from catalog import cache as catalog_cache
from partners import session_services

from .test_conditional_requests import order, paths, rows_of, stored  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stored")]


def _redis(key: str):
    """The raw client and the stored name of one of the catalog's keys."""
    name = cache.make_and_validate_key(key)
    return cache._cache.get_client(name, write=True), name


def _restart(event=None) -> None:
    cache.clear()  # FLUSHDB: what a restart of compose's Redis (nothing kept on disk) leaves


def _expire(event) -> None:
    client, name = _redis(catalog_cache.event_version_key(event.event_id))
    assert client.pexpire(name, 1)  # the event version's own expiry, reached
    time.sleep(0.05)
    assert not client.exists(name)


def _evict(event) -> None:
    client, name = _redis(catalog_cache.event_version_key(event.event_id))
    assert client.delete(name) == 1  # what an eviction under maxmemory does to the one key


@pytest.mark.parametrize("lose", [_restart, _expire, _evict], ids=["flushdb", "expiry", "eviction"])
def test_a_tag_answered_before_a_lost_version_never_matches_again(
    auth_client, event, django_capture_on_commit_callbacks, lose
):
    session_services.token_sessions_flush_all()  # the token's session is in the database, whatever Redis loses
    path = paths(event)[3]
    _restart()
    first = auth_client.get(path)
    assert rows_of(first) == {"A": 8, "B": 16}
    catalog_cache.local.clear()

    with django_capture_on_commit_callbacks(execute=True):
        order(auth_client, event, quantity=4)
    session_services.token_sessions_flush_all()
    after_order = auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert rows_of(after_order) == {"A": 4, "B": 16}

    lose(event)
    catalog_cache.local.clear()  # another web process: it holds no copy of its own
    after_loss = auth_client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert rows_of(after_loss) == {"A": 4, "B": 16}
    assert after_loss["ETag"] not in (first["ETag"], after_order["ETag"])
    # The fresh version was set once and is shared: the new tag holds until the next change.
    catalog_cache.local.clear()
    assert auth_client.get(path, HTTP_IF_NONE_MATCH=after_loss["ETag"]).status_code == 304


def test_a_version_lost_between_two_reads_is_set_once_for_every_process(event):
    """Two processes missing the same version at once agree on one fresh version (set only if absent)."""
    key = catalog_cache.event_version_key(event.event_id)
    first = catalog_cache._stamp({}, event.event_id)
    second = catalog_cache._stamp({}, event.event_id)
    assert first == second and "0" not in first
    assert cache.get(key) == first[1]
