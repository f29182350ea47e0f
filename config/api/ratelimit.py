"""Fixed-window rate limits kept in the shared cache (Redis).

Every web process counts in the same Redis keys, so the limit holds across processes and machines.
If the cache does not answer, the limiter fails open (requests are served, nothing is counted) and a
warning is logged: an outage of Redis must not take the API down with it.
"""

import hashlib
import logging
import math
import os
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import hiredis
from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from redis.connection import HiredisRespSerializer
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import errors

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateLimitState:
    limit: int
    remaining: int
    reset: int  # seconds until the window resets
    exceeded: bool
    policy: str = "default"  # the policy's name in the IETF draft's fields
    window: int = WINDOW_SECONDS
    # The cache entry that counted this request (what ``give_back`` takes one from).
    counter: str = ""

    def headers(self) -> dict[str, str]:
        """The draft-03 trio partners already read, and the current draft's structured fields
        (draft-ietf-httpapi-ratelimit-headers: ``RateLimit-Policy`` names quota and window,
        ``RateLimit`` the remaining quota and the seconds until it resets)."""
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
            "RateLimit-Policy": f'"{self.policy}";q={self.limit};w={self.window}',
            "RateLimit": f'"{self.policy}";r={self.remaining};t={self.reset}',
        }


def _window(now: float | None, window: int) -> tuple[int, int]:
    now = time.time() if now is None else now
    window_start = int(now // window) * window
    return window_start, max(1, math.ceil(window_start + window - now))


def hit(
    *, key: str, limit: int, window: int = WINDOW_SECONDS, now: float | None = None, policy: str = "default"
) -> RateLimitState | None:
    """Count one request against ``key``; ``None`` when the store is unreachable (fail open)."""
    window_start, reset = _window(now, window)
    cache_key = f"rl:{key}:{window_start}"
    try:
        count, _ = _count(cache_key, timeout=window + 5)
    except Exception:
        logger.warning("rate limit store unreachable; request not counted", exc_info=True)
        return None
    return RateLimitState(
        limit=limit,
        remaining=max(0, limit - count),
        reset=reset,
        exceeded=count > limit,
        policy=policy,
        window=window,
    )


def window_key(key: str, *, window: int = WINDOW_SECONDS, now: float | None = None) -> str:
    """The cache key counting ``key`` in the current window (what :func:`peek` reads)."""
    return f"rl:{key}:{_window(now, window)[0]}"


def state_of(
    count: int, *, limit: int, window: int = WINDOW_SECONDS, reached: bool = False, policy: str = "default"
) -> RateLimitState:
    """The state of a window holding ``count``; ``reached``: exceeded once ``limit`` were counted (a
    peek), rather than past it (a hit)."""
    reset = _window(None, window)[1]
    exceeded = count >= limit if reached else count > limit
    return RateLimitState(
        limit=limit,
        remaining=max(0, limit - count),
        reset=reset,
        exceeded=exceeded,
        policy=policy,
        window=window,
    )


def peek(
    *, key: str, limit: int, window: int = WINDOW_SECONDS, now: float | None = None
) -> RateLimitState | None:
    """The state of ``key``'s window without counting; ``exceeded`` once ``limit`` hits were counted."""
    window_start, reset = _window(now, window)
    try:
        count = int(caches["default"].get(f"rl:{key}:{window_start}") or 0)
    except Exception:
        logger.warning("rate limit store unreachable; limit not checked", exc_info=True)
        return None
    return RateLimitState(
        limit=limit, remaining=max(0, limit - count), reset=reset, exceeded=count >= limit, window=window
    )


@dataclass
class WriteIf:
    """Writes that travel in the counting round trip of :func:`hit_and_read` and are made only if they are due:
    the request is within its budget and every entry the round trip reads still holds, byte for byte, what
    ``expect`` gives (one ``bytes`` per entry of ``read``, in its order). The caller decides that the request
    would be answered if those bytes are still there, so the write and that decision are taken on the same
    state, in one step of Redis. ``commands`` are plain commands (``("SET", key, value, "EX", seconds)``) on
    the server that keeps the counter (one Redis, as every round trip here assumes).

    Filled in by the round trip: ``raw``, the bytes of the entries read (absent ones left out), and
    ``replies``, the writes' replies when they were made (``None``: not made, or the round trip failed)."""

    expect: list[bytes] = field(default_factory=list)
    commands: list[tuple] = field(default_factory=list)
    raw: dict[str, bytes] = field(default_factory=dict)
    replies: list | None = None


def hit_and_read(
    *,
    key: str,
    limit: int,
    read: list[str],
    window: int = WINDOW_SECONDS,
    policy: str = "default",
    write_if: WriteIf | None = None,
) -> tuple[RateLimitState | None, dict[str, Any] | None]:
    """Count one request against ``key`` and read the cache entries ``read``, in one round trip on Redis;
    with ``write_if``, make its writes in the same round trip when they are due (:class:`WriteIf`).

    Returns the rate-limit state and the entries found (absent keys left out, as ``get_many`` does); both
    ``None`` when the store is unreachable: the limiter fails open, and the caller reads what it needs
    from the database.
    """
    window_start, reset = _window(None, window)
    counter = f"rl:{key}:{window_start}"
    try:
        count, found = _count(counter, timeout=window + 5, read=read, limit=limit, write_if=write_if)
    except Exception:
        logger.warning("rate limit store unreachable; request not counted", exc_info=True)
        if write_if is not None:
            write_if.replies = None
        return None, None
    state = RateLimitState(
        limit=limit,
        remaining=max(0, limit - count),
        reset=reset,
        exceeded=count > limit,
        policy=policy,
        window=window,
        counter=counter,
    )
    return state, found


def give_back(state: RateLimitState | None) -> None:
    """Take back the hit counted in ``state``: the request turned out not to be the budget owner's (a revoked
    token), so it costs nothing. Counting first keeps the accepted request's one round trip; only a refused
    one pays a second."""
    if state is None or not state.counter:
        return
    try:
        caches["default"].decr(state.counter)
    except ValueError:
        pass  # the window has ended since: nothing left to give back
    except Exception:
        logger.warning("rate limit store unreachable; hit not given back", exc_info=True)


def _count(
    cache_key: str,
    *,
    timeout: int,
    read: list[str] | tuple = (),
    limit: int = 0,
    write_if: WriteIf | None = None,
) -> tuple[int, dict[str, Any]]:
    """Add one to the window's counter; return it, with the cache entries ``read`` that exist.

    One pipelined round trip to Redis (MGET, INCR, EXPIRE): every API request pays it, so it counts. With
    ``write_if`` holding writes and an expectation for each entry read, the same round trip runs
    :data:`_COUNT_AND_WRITE` instead, which also makes the writes when they are due.
    """
    backend = caches["default"]
    full_key = backend.make_and_validate_key(cache_key)
    full_read = [backend.make_and_validate_key(k) for k in read]
    client = backend._cache.get_client(full_key, write=True)
    done = False
    if (
        write_if is not None
        and write_if.commands
        and read
        and len(write_if.expect) == len(read)
        and time.monotonic() >= _script_refused.until
    ):
        try:
            values, count, write_if.replies = _count_and_write(
                client, full_key, timeout, limit, full_read, write_if
            )
            done = True
        except ResponseError:
            # Refused (scripts not allowed, Redis out of memory): counted as every request is, unwritten, and
            # the script is not tried again by this process for a while.
            _script_refused.until = time.monotonic() + SCRIPT_REFUSED_SECONDS
            logger.warning("the shared cache refused the counting script; counted without it", exc_info=True)
    if not done:
        commands = [("MGET", *full_read)] if read else []
        commands += [("INCR", full_key), ("EXPIRE", full_key, timeout)]
        results = pipelined(client, commands)
        values, count = (results[0] if read else []), results[-2]
    if write_if is not None:
        write_if.raw = {k: v for k, v in zip(read, values, strict=True) if v is not None}
    loads = backend._cache._serializer.loads
    return int(count), {k: loads(v) for k, v in zip(read, values, strict=True) if v is not None}


# KEYS: the counter, then the entries read. ARGV: the counter's lifetime, the limit, how many entries are read
# (n), the n bytes expected in them, then the writes, each as its length followed by the command's words. The
# writes are made when the count is within the limit and every entry holds its expected bytes (an absent one
# never does). Returns the entries' values, the count and the writes' replies (nil when none were made).
# The counter gets its lifetime when the script creates it (a count of 1): the script runs whole, so no counter
# it creates is left without one, and one the pipeline of :func:`_count` created got its lifetime there. Each
# command a script calls costs Redis about 3 µs; every quote runs this one.
_COUNT_AND_WRITE = """
local n = tonumber(ARGV[3])
local values = redis.call('MGET', unpack(KEYS, 2, n + 1))
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
if count > tonumber(ARGV[2]) then
  return {values, count, false}
end
for i = 1, n do
  if values[i] ~= ARGV[3 + i] then
    return {values, count, false}
  end
end
local replies = {}
local at = n + 4
while at <= #ARGV do
  local size = tonumber(ARGV[at])
  replies[#replies + 1] = redis.call(unpack(ARGV, at + 1, at + size))
  at = at + size + 1
end
return {values, count, replies}
"""
# Redis names a script by its SHA-1 (EVALSHA): a name, not a safeguard.
_COUNT_AND_WRITE_SHA = hashlib.sha1(_COUNT_AND_WRITE.encode(), usedforsecurity=False).hexdigest()


# After Redis refused the script, this process counts without it for this long (until ``_script_refused.until``).
SCRIPT_REFUSED_SECONDS = 60
_script_refused = SimpleNamespace(until=0.0)


def _count_and_write(client, counter: str, timeout: int, limit: int, read: list[str], write_if: WriteIf):
    """:data:`_COUNT_AND_WRITE` by its digest (``EVALSHA``), or by its text when this Redis does not hold it
    yet (a restart, ``SCRIPT FLUSH``): Redis keeps it from then on."""
    args: list = [1 + len(read), counter, *read, timeout, limit, len(read), *write_if.expect]
    for command in write_if.commands:
        args += [len(command), *command]
    try:
        (reply,) = pipelined(client, [("EVALSHA", _COUNT_AND_WRITE_SHA, *args)])
    except NoScriptError:
        (reply,) = pipelined(client, [("EVAL", _COUNT_AND_WRITE, *args)])
    values, count, replies = reply
    return values, count, replies


def packed_commands(connection, commands: list[tuple]) -> list[bytes]:
    """``connection.pack_commands(commands)``: with redis-py's hiredis packer, the commands packed by hiredis
    itself and joined (redis-py's loop over them cost about 5 µs a round trip). A command's name is one word
    and its arguments ``str``, ``bytes`` or numbers, as hiredis packs them; another packer packs as it does."""
    if type(getattr(connection, "_command_packer", None)) is HiredisRespSerializer:
        return [b"".join([hiredis.pack_command(command) for command in commands])]
    return connection.pack_commands(commands)


def pipelined(client, commands: list[tuple]) -> list:
    """Send ``commands`` in one write and read their replies: what redis-py's ``pipeline(transaction=False)``
    does, without building a pipeline object per request (every API request pays this round trip), on the
    calling thread's own connection of the pool (:func:`_thread_connection`). A connection that failed
    mid-way is closed, never used again with replies still unread; one the server closed meanwhile (a Redis
    restart) is opened again and the round trip sent once more."""
    connection = _thread_connection(client.connection_pool)
    packed = packed_commands(connection, commands)
    for attempt in (1, 2):
        try:
            connection.send_packed_command(packed)
            return _replies(connection, len(commands))
        except (RedisConnectionError, RedisTimeoutError):
            connection.disconnect()  # the next send connects again
            if attempt == 2:
                raise
        except BaseException:
            connection.disconnect()
            raise
    raise AssertionError("unreachable")


def _replies(connection, count: int) -> list:
    """The next ``count`` replies on ``connection``, each read by the connection's parser as
    ``connection.read_response()`` reads it, without that method's wrapping of every reply (the server's address
    formatted for an error message, in case one is raised; the health check's clock): a tenth of the round trip's
    instructions. The failures are the same: a socket's error is raised as redis-py's ``TimeoutError`` or
    ``ConnectionError``, and a reply that is an error (``NOSCRIPT``, ``OOM``) is raised once every reply is read.
    A connection with a health check interval reads through ``read_response``, which keeps its clock."""
    if connection.health_check_interval:
        return [connection.read_response() for _ in range(count)]
    read = connection._parser.read_response
    try:
        replies = [read() for _ in range(count)]
    except TimeoutError as exc:  # socket.timeout
        raise RedisTimeoutError(f"Timeout reading from Redis: {exc.args}") from exc
    except OSError as exc:
        raise RedisConnectionError(f"Error while reading from Redis: {exc.args}") from exc
    for reply in replies:
        if isinstance(reply, ResponseError):
            raise reply
    return replies


def _thread_connection(pool):
    """The calling thread's connection of ``pool``: borrowed from the pool once, then kept by the thread for
    its life. Borrowing it per round trip (the pool's lock, its connection check and its metrics) cost about
    40 µs of CPU a request. A web process has a fixed set of threads (gunicorn's), each keeping one
    connection per pool, which is what the pool held for them anyway; a forked child borrows its own."""
    local = pool.__dict__.get("_thread_connections")
    if local is None:
        local = pool.__dict__.setdefault("_thread_connections", threading.local())
    connection = getattr(local, "connection", None)
    if connection is None or local.pid != os.getpid():
        connection = pool.get_connection()
        local.connection, local.pid = connection, os.getpid()
        # Kept with the connection: redis-py holds its connect callbacks by weak reference.
        local.timeouts = _KernelTimeouts()
        connection.register_connect_callback(local.timeouts.apply)
        local.timeouts.apply(connection)
    return connection


class _KernelTimeouts:
    """The thread's connection waits under the kernel's timeouts (``SO_RCVTIMEO``, ``SO_SNDTIMEO``) instead of
    Python's: a socket with a Python timeout polls before every send and every receive, two system calls more
    per round trip (about 3 µs of CPU, a tenth of the round trip). Same bound: a send or receive that waits
    longer than ``socket_timeout`` fails, and :func:`pipelined` closes the connection and tries once more, as on
    a Python timeout (redis-py reports the kernel's ``EAGAIN`` as a connection error, the other as a timeout:
    both are handled alike). Applied again on every connect (redis-py sets Python's timeout then); a TLS
    connection, or one without a timeout, keeps redis-py's."""

    def apply(self, connection) -> None:
        sock = getattr(connection, "_sock", None)
        timeout = getattr(connection, "socket_timeout", None)
        if sock is None or not timeout or isinstance(sock, ssl.SSLSocket):
            return
        seconds = int(timeout)
        interval = struct.pack("ll", seconds, int(round((timeout - seconds) * 1_000_000)))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, interval)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, interval)
        sock.settimeout(None)


def client_ip(request: HttpRequest) -> str:
    """``REMOTE_ADDR``, unless ``TRUSTED_PROXY_COUNT`` proxies append to ``X-Forwarded-For``.

    With N trusted proxies only the N-th entry from the right is believed: entries further left were
    written by the client and a forged header cannot buy a fresh bucket.
    """
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        chain = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if len(chain) >= proxies:
            return chain[-proxies]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def enforce(request: HttpRequest, *, key: str, limit: int, policy: str = "default") -> None:
    """Count the request; raise RATE_LIMIT_EXCEEDED past the limit. Headers are added by the middleware."""
    apply(request, hit(key=key, limit=limit, policy=policy))


def apply(request: HttpRequest, state: RateLimitState | None) -> None:
    """Hand a counted request's state to the middleware (headers); RATE_LIMIT_EXCEEDED past the limit."""
    if state is None:
        return
    # The underlying Django request carries the state to RequestIdMiddleware, which sets the headers.
    getattr(request, "_request", request).ratelimit = state
    if state.exceeded:
        raise errors.RateLimitExceeded(headers={"Retry-After": str(state.reset)})
