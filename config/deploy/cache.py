"""Django's Redis cache backend, with one ``redis.Redis`` client per connection pool.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache call, and redis-py's
constructor fills a table of response callbacks each time. Under load that was 15% of the CPU of a
cached catalog request (py-spy, ``make bench ARGS="--profile events --gil"``). A ``redis.Redis`` is
safe to share between threads (each command borrows a connection from the pool), so one per pool is
kept and reused. Behaviour is otherwise Django's.
"""

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property


class ReusingRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class ReusingRedisCache(RedisCache):
    @cached_property
    def _cache(self) -> ReusingRedisCacheClient:
        return ReusingRedisCacheClient(self._servers, **self._options)
