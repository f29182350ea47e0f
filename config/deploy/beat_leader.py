"""Beat on every host, one of them leading: ``celery -A config beat`` schedules only while it holds a lock in
Redis (``CELERY_BEAT_SCHEDULER`` in the production shape).

Every beat tries to take the lock (``SET key token NX PX ttl``); the one that holds it sends the periodic tasks
and renews the lock several times per ``BEAT_LEADER_LOCK_SECONDS`` (30). The others send nothing and try again
every few seconds, so when the leader dies (its host killed, the process gone) its lock expires and another
beat leads within the lock's lifetime plus one try: well under a minute. A leader that cannot renew (Redis
unreachable, the lock taken over after a long pause) stops sending at once. A leader that stops cleanly
releases the lock, so the next takes over within seconds.

The schedule file stays each beat's own: a beat that becomes leader sends what its file says is due (at worst
each periodic task once more, early; every one of them is a sweep that is safe to run twice).
"""

from __future__ import annotations

import logging
import socket
import time
import uuid

import redis
from celery.beat import PersistentScheduler
from django.conf import settings

logger = logging.getLogger(__name__)

# Renew only if the lock is ours (never extend a lock another beat took after ours expired).
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def lock_key() -> str:
    # Several deployments on one Redis each have their own CACHE_KEY_PREFIX, hence their own leader.
    return f"{settings.CACHES['default'].get('KEY_PREFIX') or 'ps'}:beat-leader"


class LeaderScheduler(PersistentScheduler):
    """celery's PersistentScheduler, sending only while this beat holds the leader lock."""

    def __init__(self, *args, **kwargs) -> None:
        self.lock_seconds = float(settings.BEAT_LEADER_LOCK_SECONDS)
        self.token = f"{socket.gethostname()}:{uuid.uuid4().hex}"
        self.leading = False
        self.renewed_at = 0.0
        self.client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        super().__init__(*args, **kwargs)

    @property
    def follower_poll(self) -> float:
        return max(1.0, self.lock_seconds / 6)

    def _lead(self) -> bool:
        ttl_ms = int(self.lock_seconds * 1000)
        now = time.monotonic()
        try:
            if self.leading and now - self.renewed_at >= self.lock_seconds / 6:
                if self.client.eval(_RENEW, 1, lock_key(), self.token, ttl_ms):
                    self.renewed_at = now
                else:
                    self.leading = False
                    logger.warning("beat: lost the leader lock; no longer sending periodic tasks")
            if not self.leading and self.client.set(lock_key(), self.token, nx=True, px=ttl_ms):
                self.leading, self.renewed_at = True, now
                logger.info("beat: leader (%s); sending the periodic tasks", self.token)
        except redis.RedisError:
            if self.leading:
                logger.warning("beat: Redis does not answer; no longer sending periodic tasks", exc_info=True)
            self.leading = False
        return self.leading

    def tick(self, *args, **kwargs) -> float:
        if not self._lead():
            return self.follower_poll
        # Back within a sixth of the lock's lifetime, whatever the schedule says, to renew it.
        return min(super().tick(*args, **kwargs), self.lock_seconds / 6)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.leading:
                try:
                    self.client.eval(_RELEASE, 1, lock_key(), self.token)
                    logger.info("beat: released the leader lock")
                except redis.RedisError:
                    pass  # it expires on its own
                self.leading = False
