"""A pending list in Redis: rows made in Redis first, for a batched writer to copy to PostgreSQL.

Token sessions (partners/token_cache.py) and quotes (quotes/quote_cache.py) are created in Redis and appended
to such a list in the round trip that creates them; a writer on the beat takes the lock, reads the oldest
entries, writes them in one transaction and trims the list by the count it wrote. At least once: a writer
that dies before trimming leaves them for the next run, whose insert skips what is already written.
"""

import logging
import uuid
from collections.abc import Callable
from typing import Generic, TypeVar

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)

T = TypeVar("T")


def redis_backend() -> RedisCache:
    """The default cache: Redis, whose client the pending lists use directly."""
    return caches["default"]


class PendingList(Generic[T]):
    """The list at ``key`` (entries made by ``dumps``, read back by ``loads``) and its writer's lock."""

    def __init__(
        self, key: str, *, lock_key: str, loads: Callable[[bytes], T], lock_seconds: int = 30
    ) -> None:
        self.key = key
        self.lock_key = lock_key
        self.loads = loads
        # A writer that died holding the lock delays the next run by this much, never loses an entry.
        self.lock_seconds = lock_seconds

    def append_commands(self, backend: RedisCache, raw: str, *, ttl: int) -> list[tuple]:
        """The commands that append ``raw``, for the caller's own pipeline: a list nobody drains (no beat)
        ends ``ttl`` seconds after its newest entry."""
        key = backend.make_and_validate_key(self.key)
        return [("RPUSH", key, raw), ("EXPIRE", key, ttl)]

    def read(self, *, limit: int = 0) -> list[T]:
        """The oldest ``limit`` entries (all of them with 0). Raises if Redis does not answer."""
        backend = redis_backend()
        key = backend.make_and_validate_key(self.key)
        raw = backend._cache.get_client(key).lrange(key, 0, limit - 1 if limit else -1)
        return [self.loads(item) for item in raw]

    def drop(self, count: int) -> None:
        """Take the oldest ``count`` entries off the list, once they are in the database."""
        backend = redis_backend()
        if count <= 0:
            return
        key = backend.make_and_validate_key(self.key)
        backend._cache.get_client(key, write=True).ltrim(key, count, -1)

    def lock_take(self) -> str | None:
        """One writer at a time drains the list (it is trimmed by count). The lock's token, or None while
        another writer holds it."""
        token = uuid.uuid4().hex
        return token if cache.add(self.lock_key, token, timeout=self.lock_seconds) else None

    def drain(
        self,
        write: Callable[[list[T]], None],
        *,
        limit: int,
        read: Callable[..., list[T]] | None = None,
    ) -> int:
        """One run of the batched writer: under the lock, the oldest ``limit`` entries (``read``, this list's
        own by default) go to ``write`` (one transaction of the caller's), then off the list. Returns how many
        it took off: 0 when the list is empty, another writer holds the lock or Redis does not answer. An
        error of ``write`` propagates and leaves the entries for the next run."""
        try:
            lock = self.lock_take()
            pending = (read or self.read)(limit=limit) if lock else []
        except Exception:
            logger.warning("cache unreachable; %s not written", self.key)
            return 0
        try:
            if not pending:
                return 0
            write(pending)
            self.drop(len(pending))
            return len(pending)
        finally:
            if lock:
                self.lock_release(lock)

    def lock_release(self, token: str) -> None:
        try:
            if cache.get(self.lock_key) == token:
                cache.delete(self.lock_key)
        except Exception:
            logger.warning("cache unreachable; the lock %s expires by itself", self.lock_key)


def drain_all(run: Callable[[], int], *, batch: int, rounds: int = 20) -> int:
    """Runs of a batched writer (``run``, taking up to ``batch``) one after another while they come full, so
    a burst is written by one call."""
    taken = 0
    for _ in range(rounds):
        done = run()
        taken += done
        if done < batch:
            break
    return taken
