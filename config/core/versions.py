"""Versions kept in the shared cache that stamp cached copies (catalog pages, payment readiness, credentials).

A copy is believed only while the versions it was stamped with are still the current ones. A version the cache no
longer holds (a restart, its expiry, an eviction) must never read as a fixed default: a copy stamped with that
default before a change would be believed again once the change's version is lost. So a missing version is
replaced by a fresh random one, set only if nobody set one meanwhile, and a version never repeats.
"""

import uuid

from django.core.cache import cache


def version_or_fresh(found: dict, key: str, *, timeout: int | None) -> str:
    """``found[key]``, or a fresh random version set once (``timeout`` seconds; None: no expiry) when the cache
    lost it. Raises when the cache does not answer."""
    if key in found:
        return found[key]
    fresh = uuid.uuid4().hex
    if cache.add(key, fresh, timeout=timeout):
        return fresh
    # Lost again between the two steps: this caller alone gets the fresh one, a stamp no copy ever had.
    return cache.get(key) or fresh
