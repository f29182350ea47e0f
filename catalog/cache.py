"""Short-lived shared-cache copies of the catalog's read responses.

Only the partner-facing read endpoints use this: a page is kept for ``CATALOG_CACHE_SECONDS`` (default 5)
under a key made of the endpoint and its full, validated query. Every catalog write bumps a version
number, and an entry made under an older version is ignored, so staff edits show at once; orders
decrement row quantities without a bump, so a listed quantity may lag by a few seconds. Quotes and orders
never read from here: they decide on the database's current rows.

If the cache does not answer, the database answers instead: slower, never wrong.
"""

import hashlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

VERSION_KEY = "catalog:version"
_MISSING = object()


def bump_version() -> None:
    try:
        cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)
    except Exception:
        logger.warning("catalog cache unreachable; version not bumped", exc_info=True)


def entry_key(*parts: Any) -> str:
    raw = "\x1f".join(str(p) for p in parts)
    return "catalog:r:" + hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def cached(key: str, build: Callable[[], Any]) -> Any:
    """``build()``'s result, shared between processes for a few seconds. One cache round trip on a hit."""
    seconds = settings.CATALOG_CACHE_SECONDS
    if seconds <= 0:
        return build()
    try:
        found = cache.get_many([VERSION_KEY, key])
    except Exception:
        logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
        return build()
    version = found.get(VERSION_KEY, "0")
    entry = found.get(key, _MISSING)
    if entry is not _MISSING and isinstance(entry, tuple) and len(entry) == 2 and entry[0] == version:
        return entry[1]
    value = build()
    try:
        cache.set(key, (version, value), timeout=seconds)
    except Exception:
        logger.warning("catalog cache unreachable; page not cached", exc_info=True)
    return value
