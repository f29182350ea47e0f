"""A pending list in Redis: rows made in Redis first, for a batched writer to copy to PostgreSQL.

Token sessions (partners/token_cache.py) and quotes (quotes/quote_cache.py) are created in Redis and appended
to such a list in the round trip that creates them; a writer on the beat takes the lock, reads the oldest
entries, writes them in one transaction and then takes exactly those entries off the list, in one step of Redis
that first checks the lock is still its own. At least once: a writer that dies before that step, or outlives its
lock (its insert held back longer than ``lock_seconds``), leaves its entries for the next run, whose insert skips
what is already written; entries appended meanwhile are never taken off unwritten.
"""

import logging
import uuid
from collections.abc import Callable
from typing import Generic, TypeVar

from django.core.cache import caches
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

    def _client(self, *, write: bool = False):
        """The raw client and this list's stored name."""
        backend = redis_backend()
        key = backend.make_and_validate_key(self.key)
        return backend._cache.get_client(key, write=write), key

    def _read_raw(self, limit: int) -> list[bytes]:
        client, key = self._client()
        return client.lrange(key, 0, limit - 1 if limit else -1)

    def read(self, *, limit: int = 0) -> list[T]:
        """The oldest ``limit`` entries (all of them with 0). Raises if Redis does not answer."""
        return [self.loads(item) for item in self._read_raw(limit)]

    def _lock_name(self) -> str:
        return redis_backend().make_and_validate_key(self.lock_key)

    def lock_take(self) -> str | None:
        """One writer at a time drains the list. The lock's token, or None while another writer holds it.
        The token is stored as is, so that the script below can compare it."""
        client, _ = self._client(write=True)
        token = uuid.uuid4().hex
        if not client.set(self._lock_name(), token, nx=True, ex=self.lock_seconds):
            return None
        return token

    def remove_written(self, token: str, raw: list[bytes]) -> int:
        """Take exactly the entries ``raw`` off the list, only while ``token`` still holds the lock, in one
        step of Redis. Returns how many it took off; -1 when the lock is no longer this writer's (it outlived
        it): the entries stay, and the writer that holds the lock now writes them again (its insert skips
        what is already written)."""
        client, key = self._client(write=True)
        if not raw:
            return 0
        return int(client.eval(_REMOVE_IF_HELD, 2, key, self._lock_name(), token, *raw))

    def drain(self, write: Callable[[list], None], *, limit: int, as_stored: bool = False) -> int:
        """One run of the batched writer: under the lock, the oldest ``limit`` entries go to ``write`` (one
        transaction of the caller's), then exactly those entries off the list, if the lock is still this
        run's. Returns how many it took off: 0 when the list is empty, another writer holds the lock, this
        run outlived its lock or Redis does not answer. An error of ``write`` propagates and leaves the
        entries for the next run. ``as_stored``: ``write`` takes the entries as Redis holds them (bytes), not loaded."""
        try:
            lock = self.lock_take()
            raw = self._read_raw(limit) if lock else []
        except Exception:
            logger.warning("cache unreachable; %s not written", self.key)
            return 0
        try:
            if not raw:
                return 0
            write(raw if as_stored else [self.loads(item) for item in raw])
            # Removed by the entries themselves, not by a count: a writer that outlived its lock must not
            # trim entries another writer read, nor those appended meanwhile (they would never be written).
            removed = self.remove_written(lock, raw)
            if removed < 0:
                logger.warning(
                    "%s: the writer outlived its lock; its entries are left to the next run", self.key
                )
                lock = None  # another writer's lock now (or none): not this run's to release
                return 0
            return removed
        finally:
            if lock:
                self.lock_release(lock)

    def lock_release(self, token: str) -> None:
        try:
            client, _ = self._client(write=True)
            client.eval(_RELEASE_IF_HELD, 1, self._lock_name(), token)
        except Exception:
            logger.warning("cache unreachable; the lock %s expires by itself", self.lock_key)


# KEYS[1] the list, KEYS[2] the lock; ARGV[1] the writer's token, then the entries it wrote.
_REMOVE_IF_HELD = """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
local removed = 0
for i = 2, #ARGV do removed = removed + redis.call('LREM', KEYS[1], 1, ARGV[i]) end
return removed
"""
# KEYS[1] the lock; ARGV[1] the token: deleted only by the writer that holds it.
_RELEASE_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


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
