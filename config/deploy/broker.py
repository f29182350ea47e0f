"""Celery's Redis transport, publishing through one ``redis.Redis`` client per channel.

kombu's Redis channel builds a new ``redis.Redis`` for every message it publishes (``conn_or_acquire``
without a client), and redis-py's constructor fills its table of response callbacks each time: most of
the CPU of a publish that is otherwise one LPUSH. The client is safe to keep (it borrows a connection
from the channel's pool per command), so each channel makes one and reuses it (as config/deploy/cache.py does
for the cache). ``CELERY_BROKER_TRANSPORT`` names this transport whenever the broker is Redis.
"""

from contextlib import contextmanager

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _publish_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        if self._publish_client is None:
            self._publish_client = self._create_client()
        yield self._publish_client


class Transport(kombu_redis.Transport):
    Channel = Channel
