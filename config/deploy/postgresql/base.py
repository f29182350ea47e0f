"""Django's PostgreSQL backend whose connection pool checks a connection without a round trip when it is sound.

With a pool and ``CONN_HEALTH_CHECKS``, Django has psycopg's pool run ``ConnectionPool.check_connection`` on
every connection it lends: an empty query, one more round trip for every request that touches the database.
A connection the server has closed (a restart, a failover, ``pg_terminate_backend``, an idle cut) has something
on its socket: the server's last message or the end of the stream. :func:`check_connection` polls the socket
first, without waiting: nothing to read and not marked closed or broken means the connection is as the last
request left it, and it is lent as it is; anything to read (that, or a notice) and psycopg's check decides, with
its round trip. A connection that dies silently (a cable pulled, nothing sent) passes either check until its
first statement fails; ``config/core/dbretry.py`` replays the request that met it when nothing had been written.
"""

from __future__ import annotations

import select

import psycopg
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


def check_connection(conn: psycopg.Connection) -> None:
    """Raise if ``conn`` must not be lent (the pool then discards it and takes or makes another)."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError) as exc:
        raise psycopg.OperationalError(f"the connection's socket cannot be polled: {exc}") from exc
    if readable:
        ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        # Django built it with psycopg's check when CONN_HEALTH_CHECKS is on (and none when off).
        if pool is not None and pool._check is ConnectionPool.check_connection:
            pool._check = check_connection
        return pool

    def close_pool_if_made(self) -> None:
        """Close this process's pool if it made one: ``close_pool`` builds one (opening its connections) only to
        close it when there is none."""
        if self.alias in self._connection_pools:
            self.close_pool()
