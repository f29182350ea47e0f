"""Short-lived copies of the catalog's read responses, so a hot list costs no database work.

Only the partner-facing read endpoints use this. A page is kept under a key made of the endpoint and its
full, validated query:
- in the shared cache (Redis) for ``CATALOG_CACHE_SECONDS`` (default 5), shared by every web process;
- in the process itself for at most ``CATALOG_LOCAL_CACHE_SECONDS`` (default 1), which saves the Redis
  round trip on the hottest pages.
Every catalog write bumps a version number once it commits; an entry made under an older version is
ignored, so a staff edit shows at once in the process that made it and within a second elsewhere. Orders
decrement row quantities without a bump, so a listed quantity may lag by a few seconds. Quotes and orders
never read from here: they decide on the database's current rows.

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


def bump_version() -> None:
    local.clear()
    try:
        cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)
    except Exception:
        logger.warning("catalog cache unreachable; version not bumped", exc_info=True)


def entry_key(*parts: Any) -> str:
    raw = "\x1f".join(str(p) for p in parts)
    return "catalog:r:" + hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def cached(key: str, build: Callable[[], Any]) -> Any:
    """``build()``'s result, shared for a few seconds: no round trip on a local hit, one on a shared hit."""
    seconds = settings.CATALOG_CACHE_SECONDS
    if seconds <= 0:
        return build()
    local_seconds = min(seconds, local_cache_seconds())
    value = local.get(key) if local_seconds > 0 else _MISSING
    if value is not _MISSING:
        return value
    try:
        found = cache.get_many([VERSION_KEY, key])
    except Exception:
        logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
        return build()
    version = found.get(VERSION_KEY, "0")
    entry = found.get(key, _MISSING)
    if entry is not _MISSING and isinstance(entry, tuple) and len(entry) == 2 and entry[0] == version:
        value = entry[1]
    else:
        value = build()
        try:
            cache.set(key, (version, value), timeout=seconds)
        except Exception:
            logger.warning("catalog cache unreachable; page not cached", exc_info=True)
    if local_seconds > 0:
        local.put(key, value, local_seconds)
    return value
