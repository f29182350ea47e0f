"""Short-lived copies of the catalog's read responses, so a hot list costs no database work.

Only the partner-facing read endpoints use this. A page is kept under a key made of the endpoint and its
full, validated query:
- in the shared cache (Redis) for ``CATALOG_CACHE_SECONDS`` (default 5), shared by every web process;
- in the process itself for at most ``CATALOG_LOCAL_CACHE_SECONDS`` (default 1).

Each entry is stamped with the versions it was built under, and an entry whose stamp is not the current one
is never served:
- the catalog version (``catalog:version``) changes once any staff edit or import commits;
- each event's availability version (``catalog:ev:<hash of event_id>``) changes once an order, a cancel, an expiry
  or a staff adjustment of one of its rows' quantities commits (``availability_changed``).

Event pages (the list, one event) carry no quantity: a local hit costs no round trip, and a staff edit shows
at once in the process that made it and within a second elsewhere. Section and row pages carry the
quantities (docs/partners/catalog-and-quotes.md "Catalog › Availability and freshness"): every read of them fetches the two versions
from the shared cache in one MGET, together with the page when this process has no copy, so the next read
after a committed order shows the new figure in every process, while an unchanged event is still served
from the cache. Quotes and orders never read from here: they decide on the database's current rows.

If the shared cache does not answer, the database answers instead: slower, never wrong.
"""

import hashlib
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

VERSION_KEY = "catalog:version"
LOCAL_MAX_ENTRIES = 512
# An event's version outlives every page stamped with it by far (pages live CATALOG_CACHE_SECONDS), so an
# expired version can never make an older page current again; a day keeps Redis free of dead events' keys.
EVENT_VERSION_SECONDS = 24 * 3600
_MISSING = object()


class _LocalTier:
    """A small, thread-safe, time-bounded LRU of built pages in this process."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.entries: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return _MISSING
            if entry[0] <= time.monotonic():
                del self.entries[key]
                return _MISSING
            return entry[1]

    def put(self, key: str, value: Any, seconds: float) -> None:
        with self.lock:
            self.entries[key] = (time.monotonic() + seconds, value)
            self.entries.move_to_end(key)
            while len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


local = _LocalTier(LOCAL_MAX_ENTRIES)


def local_cache_seconds() -> float:
    """``CATALOG_LOCAL_CACHE_SECONDS``: 1 by default, 0 under TESTING so tests see every write."""
    return settings.CATALOG_LOCAL_CACHE_SECONDS


def event_version_key(event_id: str) -> str:
    # Hashed like the pages' keys: the id comes from the URL and may hold anything until looked up.
    return "catalog:ev:" + hashlib.blake2b(event_id.encode(), digest_size=16).hexdigest()


def bump_version() -> None:
    local.clear()
    try:
        cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)
    except Exception:
        logger.warning("catalog cache unreachable; version not bumped", exc_info=True)


def availability_changed(*, event_ids: set[str]) -> None:
    """Once row quantities of these events changed (call after commit): their section and row pages,
    in every process, are rebuilt on their next read. A random version, not a counter: a version key that
    expired or was evicted can never bring back the stamp of an older page."""
    if not event_ids:
        return
    try:
        cache.set_many(
            {event_version_key(event_id): uuid.uuid4().hex for event_id in event_ids},
            timeout=EVENT_VERSION_SECONDS,
        )
    except Exception:
        # The pages of these events may show the old quantity until they expire (CATALOG_CACHE_SECONDS).
        logger.warning("catalog cache unreachable; availability version of %s not bumped", event_ids)


def entry_key(*parts: Any) -> str:
    raw = "\x1f".join(str(p) for p in parts)
    return "catalog:r:" + hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def _active() -> bool:
    return settings.CATALOG_CACHE_SECONDS > 0


def prefetch_keys(key: str) -> list[str]:
    """The shared entries :func:`cached` will read for ``key`` (none on a local hit), so that the request's
    first round trip (authentication's, see partners.authentication) can fetch them."""
    if not _active() or (local_cache_seconds() > 0 and local.get(key) is not _MISSING):
        return []
    return [VERSION_KEY, key]


def availability_prefetch_keys(key: str, *, event_id: str) -> list[str]:
    """The shared entries :func:`cached_availability` will read for ``key``."""
    if not _active():
        return []
    held = local_cache_seconds() > 0 and local.get(key) is not _MISSING
    return [VERSION_KEY, event_version_key(event_id)] + ([] if held else [key])


def _prefetched(prefetch: tuple | None, keys: list[str]) -> dict | None:
    """The entries of ``keys`` the request's first round trip already read, if it read them all."""
    if prefetch is None:
        return None
    read, found = prefetch
    return {k: found[k] for k in keys if k in found} if read.issuperset(keys) else None


def cached(key: str, build: Callable[[], Any], *, prefetch: tuple | None = None) -> Any:
    """``build()``'s result, shared for a few seconds: no round trip on a local hit, one on a shared hit
    (none when the request's first round trip fetched it: ``prefetch``).

    For pages without quantities (events): a local copy may lag a staff edit made elsewhere by up to
    ``CATALOG_LOCAL_CACHE_SECONDS``."""
    seconds = settings.CATALOG_CACHE_SECONDS
    if seconds <= 0:
        return build()
    local_seconds = min(seconds, local_cache_seconds())
    value = local.get(key) if local_seconds > 0 else _MISSING
    if value is not _MISSING:
        return value
    try:
        found = _prefetched(prefetch, [VERSION_KEY, key])
        if found is None:
            found = cache.get_many([VERSION_KEY, key])
    except Exception:
        logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
        return build()
    version = found.get(VERSION_KEY, "0")
    entry = found.get(key, _MISSING)
    if entry is not _MISSING and isinstance(entry, tuple) and len(entry) == 2 and entry[0] == version:
        value = entry[1]
    else:
        value = _build_and_share(key, version, build, seconds)
    if local_seconds > 0:
        local.put(key, value, local_seconds)
    return value


def cached_availability(
    key: str, build: Callable[[], Any], *, event_id: str, prefetch: tuple | None = None
) -> Any:
    """``build()``'s result for a page showing ``event_id``'s quantities: never older than the last
    committed change to them, in any process. One round trip per read (the versions, and the page itself
    unless this process holds a copy stamped with them), none of its own when the request's first round
    trip fetched them (``prefetch``): the versions are then as current as that round trip."""
    seconds = settings.CATALOG_CACHE_SECONDS
    if seconds <= 0:
        return build()
    local_seconds = min(seconds, local_cache_seconds())
    event_key = event_version_key(event_id)
    held = local.get(key) if local_seconds > 0 else _MISSING
    keys = [VERSION_KEY, event_key] if held is not _MISSING else [VERSION_KEY, event_key, key]
    try:
        found = _prefetched(prefetch, keys)
        if found is None:
            found = cache.get_many(keys)
    except Exception:
        # Without the versions no copy can be trusted, the local one included.
        logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
        return build()
    stamp = (found.get(VERSION_KEY, "0"), found.get(event_key, "0"))
    if held is not _MISSING and held[0] == stamp:
        return held[1]
    if held is not _MISSING:
        # The local copy is out of date: the shared one may already be current (another process rebuilt it).
        try:
            entry = cache.get(key, _MISSING)
        except Exception:
            logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
            return build()
    else:
        entry = found.get(key, _MISSING)
    if entry is not _MISSING and isinstance(entry, tuple) and len(entry) == 2 and entry[0] == stamp:
        value = entry[1]
    else:
        value = _build_and_share(key, stamp, build, seconds)
    if local_seconds > 0:
        local.put(key, (stamp, value), local_seconds)
    return value


def _build_and_share(key: str, stamp: Any, build: Callable[[], Any], seconds: float) -> Any:
    # The stamp was read before the build: a change that commits during the build bumps the version after
    # it, so the page, even if it missed the change, is stored under a stamp that is already out of date.
    value = build()
    try:
        cache.set(key, (stamp, value), timeout=seconds)
    except Exception:
        logger.warning("catalog cache unreachable; page not cached", exc_info=True)
    return value
