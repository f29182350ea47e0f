"""Django's Redis cache backend, with one ``redis.Redis`` client per connection pool.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache call, and redis-py's
constructor fills a table of response callbacks each time. Under load that was 15% of the CPU of a
cached catalog request (py-spy, ``make bench ARGS="--profile events --gil"``). A ``redis.Redis`` is
safe to share between threads (each command borrows a connection from the pool), so one per pool is
kept and reused. Behaviour is otherwise Django's, with three of its steps that the API's requests pay made
cheaper, to the same result:
- a value read is told a pickle by its first byte (:class:`PickleFirstSerializer`), not by a failed ``int()``;
- a key is checked for what memcached could not hold character by character only when it may hold such a
  character (:meth:`ReusingRedisCache.make_and_validate_key`);
- ``set_many`` is one round trip of ``SET … EX``, without a transaction (:meth:`ReusingRedisCacheClient.set_many`).

Its reads are counted for ``/metrics`` with django-prometheus' cache counters (gets, hits, misses, failures) and time them.
"""

import pickle
import time
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient, RedisSerializer
from django.utils.functional import cached_property
from django_prometheus.cache.metrics import (
    django_cache_get_fail_total,
    django_cache_get_total,
    django_cache_hits_total,
    django_cache_misses_total,
)
from prometheus_client import Histogram

from config.api.ratelimit import pipelined

_MISSING = object()
cache_get_duration_seconds = Histogram(
    "django_cache_get_duration_seconds",
    "Duration of cache reads.",
    ["backend"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)


class CacheMetricsMixin:
    metrics_backend = "cache"

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        backend = self.metrics_backend
        django_cache_get_total.labels(backend=backend).inc()
        started = time.perf_counter()
        try:
            value = super().get(key, _MISSING, version=version)
        except Exception:
            django_cache_get_fail_total.labels(backend=backend).inc()
            raise
        finally:
            cache_get_duration_seconds.labels(backend=backend).observe(time.perf_counter() - started)
        if value is _MISSING:
            django_cache_misses_total.labels(backend=backend).inc()
            return default
        django_cache_hits_total.labels(backend=backend).inc()
        return value


class PickleFirstSerializer(RedisSerializer):
    """Django's serializer, reading a pickle without first failing to read it as an int (an exception per
    value: about 1.5 µs each). The same values: an int is written as its digits, anything else as a pickle of
    protocol 2 or higher, which starts with the PROTO opcode (0x80), a byte no integer's digits start with."""

    def loads(self, data: bytes) -> Any:
        if data[:1] == b"\x80":
            return pickle.loads(data)  # noqa: S301 (what this cache wrote, as Django's own serializer reads it)
        return super().loads(data)


class ReusingRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("serializer", PickleFirstSerializer)
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client

    def set_many(self, data: dict[str, Any], timeout: int | None) -> None:
        """Django's, in one round trip on the thread's own connection (``pipelined``) and without a transaction:
        each key ``SET`` with its expiry (``timeout`` seconds; ``None``: kept; ``0``: deleted, as Django's).
        Django's sends ``MSET``, then one ``EXPIRE`` per key, inside ``MULTI``/``EXEC`` through a pipeline
        object: every order pays one (its event's availability version) and every token one. A key is never
        without its expiry, and one set is all or nothing per key, not for the whole batch."""
        if not data:
            return
        if timeout == 0:
            commands = [("DEL", *data)]
        else:
            expiry = () if timeout is None else ("EX", timeout)
            dumps = self._serializer.dumps
            commands = [("SET", key, dumps(value), *expiry) for key, value in data.items()]
        pipelined(self.get_client(None, write=True), commands)


class ReusingRedisCache(CacheMetricsMixin, RedisCache):
    metrics_backend = "redis"

    @cached_property
    def _cache(self) -> ReusingRedisCacheClient:
        return ReusingRedisCacheClient(self._servers, **self._options)

    def make_and_validate_key(self, key: Any, version: Any = None) -> str:
        """Django's, whose warning of a key memcached could not hold (over 250 characters, a space or a control
        character) is looked for only in a key that may be one, not character by character."""
        full = self.make_key(key, version=version)
        if len(full) > 250 or not full.isprintable() or " " in full:
            self.validate_key(full)
        return full
