"""Rate limits: per partner on authenticated calls, per client_id + IP on the token endpoint."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from config.api import ratelimit
from tests.conftest import assert_error

pytestmark = pytest.mark.urls("tests.config.urls_probe")
ROOT = Path(__file__).resolve().parents[2]
TOKEN_URL = "/v1/auth/token"


def _token_body(client_id="cli_nobody", secret="sec_wrong"):
    return {"client_id": client_id, "client_secret": secret, "grant_type": "client_credentials"}


def _avoid_window_edge(margin: float = 4.0) -> None:
    """Start counting well inside one 60-second window, so the count cannot reset half-way."""
    left = 60 - (time.time() % 60)
    if left < margin:
        time.sleep(left + 0.05)


def test_partner_limit_gives_429_with_retry_after(api_client, auth_client, settings):
    settings.RATE_LIMIT_PER_MINUTE = 3
    _avoid_window_edge()
    for expected_remaining in (2, 1, 0):
        response = auth_client.get("/v1/_scoped")
        assert response["RateLimit-Remaining"] == str(expected_remaining)
        assert response["RateLimit-Limit"] == "3"
    response = auth_client.get("/v1/_scoped")
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    retry_after = int(response["Retry-After"])
    assert retry_after in range(1, 61)  # whole seconds, at most one window
    assert response["RateLimit-Remaining"] == "0"
    assert response["X-Request-ID"] == response.json()["meta"]["request_id"]


def test_partner_limit_is_per_partner(api_client, auth_client, other_auth_client, settings):
    settings.RATE_LIMIT_PER_MINUTE = 2
    _avoid_window_edge()
    for _ in range(3):
        auth_client.get("/v1/_scoped")
    assert auth_client.get("/v1/_scoped").status_code == 429
    assert other_auth_client.get("/v1/_scoped").status_code == 200


def test_token_endpoint_limit_per_client_and_ip(api_client, db, settings):
    settings.TOKEN_RATE_LIMIT_PER_MINUTE = 2
    _avoid_window_edge()
    for _ in range(2):
        assert_error(api_client.post(TOKEN_URL, _token_body(), format="json"), 401, "INVALID_CREDENTIALS")
    response = api_client.post(TOKEN_URL, _token_body(), format="json")
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    assert int(response["Retry-After"]) >= 1
    # another client_id from the same address has its own bucket
    assert_error(
        api_client.post(TOKEN_URL, _token_body("cli_other"), format="json"), 401, "INVALID_CREDENTIALS"
    )
    # the same client_id from another address too
    response = api_client.post(TOKEN_URL, _token_body(), format="json", REMOTE_ADDR="10.9.8.7")
    assert_error(response, 401, "INVALID_CREDENTIALS")


def test_forged_forwarded_for_does_not_buy_a_fresh_bucket(api_client, db, settings):
    settings.TOKEN_RATE_LIMIT_PER_MINUTE = 2
    _avoid_window_edge()
    for i in range(2):
        api_client.post(TOKEN_URL, _token_body(), format="json", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}")
    response = api_client.post(TOKEN_URL, _token_body(), format="json", HTTP_X_FORWARDED_FOR="198.51.100.77")
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")


def test_client_ip_believes_only_trusted_proxies(rf, settings):
    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.9")
    settings.TRUSTED_PROXY_COUNT = 0
    assert ratelimit.client_ip(request) == "10.0.0.2"
    settings.TRUSTED_PROXY_COUNT = 1
    assert ratelimit.client_ip(request) == "198.51.100.9"  # the entry our proxy wrote, not the client's


def test_limiter_fails_open_when_the_store_is_down(auth_client, settings, monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr(ratelimit, "_count", broken)  # the counter store raises (tests/faults: Redis down)
    settings.RATE_LIMIT_PER_MINUTE = 1
    for _ in range(3):
        response = auth_client.get("/v1/_scoped")
        assert response.status_code == 200
        assert "RateLimit-Limit" not in response


def _http(method: str, url: str, body: dict | None = None) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_limit_holds_across_two_server_processes_sharing_redis(settings):
    """Two gunicorn processes count in the same Redis: the 4th request over both gets 429."""
    if not settings.REDIS_URL:
        pytest.fail("this test needs REDIS_URL (make test sets it)")
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": settings.REDIS_URL,
        "TOKEN_RATE_LIMIT_PER_MINUTE": "3",
        "DATABASE_POOL": "false",
    }
    ports = [_free_port(), _free_port()]
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    servers = [
        subprocess.Popen(
            [
                gunicorn,
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for port in ports
    ]
    try:
        for port in ports:
            deadline = time.time() + 30
            while True:
                try:
                    _http("GET", f"http://127.0.0.1:{port}/healthz")
                    break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.1)
        _avoid_window_edge()
        body = _token_body("cli_shared_bucket")
        statuses = [_http("POST", f"http://127.0.0.1:{ports[i % 2]}{TOKEN_URL}", body)[0] for i in range(4)]
        last_status, last_headers, last_body = _http("POST", f"http://127.0.0.1:{ports[1]}{TOKEN_URL}", body)
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=10)
    assert statuses == [401, 401, 401, 429]
    assert last_status == 429
    assert last_body["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert int(last_headers["Retry-After"]) >= 1


def test_the_shared_cache_parses_redis_replies_with_hiredis():
    """Every API request makes a Redis round trip; its reply is parsed by hiredis' C parser, not redis-py's
    pure-Python one."""
    from django.core.cache import caches
    from redis._parsers import _HiredisParser

    backend = caches["default"]
    client = backend._cache.get_client(write=True)
    conn = client.connection_pool.get_connection()
    try:
        assert isinstance(conn._parser, _HiredisParser)
    finally:
        client.connection_pool.release(conn)


def test_a_counter_the_counting_script_makes_has_its_lifetime_whoever_counts_next():
    """The script that counts and writes (a warm quote's round trip) gives a counter it creates its lifetime;
    later counts, by the script or by the plain round trip, leave the counter with one."""
    import uuid

    from django.core.cache import caches

    backend = caches["default"]
    client = backend._cache.get_client(write=True)
    backend.set("ratelimit-script:entry", "held")
    raw = client.get(backend.make_and_validate_key("ratelimit-script:entry"))
    counter = f"rl:script-test:{uuid.uuid4().hex}"
    written = backend.make_and_validate_key("ratelimit-script:w")

    def scripted() -> int:
        write_if = ratelimit.WriteIf(expect=[raw], commands=[("SET", written, "1", "EX", 30)])
        count, found = ratelimit._count(
            counter, timeout=65, read=["ratelimit-script:entry"], limit=10, write_if=write_if
        )
        assert write_if.replies is not None and found == {"ratelimit-script:entry": "held"}
        return count

    # Lifetimes far apart (65 s, 20 s), so that no pause of the machine between two steps blurs them.
    full = backend.make_and_validate_key(counter)
    assert scripted() == 1 and 20 < client.ttl(full) <= 65
    client.expire(full, 20)  # as if time had passed: the next count keeps the lifetime the counter has
    assert scripted() == 2 and 0 < client.ttl(full) <= 20
    assert ratelimit._count(counter, timeout=65)[0] == 3 and 20 < client.ttl(full) <= 65
    assert scripted() == 4 and 0 < client.ttl(full) <= 65


def _kept_connection():
    from django.core.cache import caches

    client = caches["default"]._cache.get_client(write=True)
    return ratelimit._thread_connection(client.connection_pool)


def test_a_connection_the_server_closed_is_opened_again_and_the_request_counted(auth_client, settings):
    """Each thread keeps its Redis connection between requests: when Redis closed it meanwhile (a restart, an
    idle timeout, CLIENT KILL), the next request connects again and is counted once."""
    import redis
    from django.conf import settings as django_settings

    settings.RATE_LIMIT_PER_MINUTE = 100
    _avoid_window_edge()
    first = auth_client.get("/v1/_scoped")
    assert first.status_code == 200
    kept = _kept_connection()
    kept.send_command("CLIENT", "ID")
    client_id = kept.read_response()
    killer = redis.Redis.from_url(django_settings.REDIS_URL)
    assert killer.client_kill_filter(_id=client_id) == 1
    second = auth_client.get("/v1/_scoped")
    assert second.status_code == 200
    assert int(second["RateLimit-Remaining"]) == int(first["RateLimit-Remaining"]) - 1
    assert _kept_connection() is kept  # the same connection, opened again


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(lambda: _redis_timeout("Timeout reading from socket"), id="redis-timeout"),
        pytest.param(lambda: ConnectionResetError(104, "Connection reset by peer"), id="socket-error"),
    ],
)
def test_a_round_trip_that_failed_half_way_never_leaves_its_replies_to_the_next(
    auth_client, settings, monkeypatch, failure
):
    """A reply not read (a timeout, or a socket error, after the commands went out) must not be read as the next
    request's: the connection is closed, so the next request's counts are its own."""
    settings.RATE_LIMIT_PER_MINUTE = 100
    _avoid_window_edge()
    first = auth_client.get("/v1/_scoped")
    kept = _kept_connection()
    parser_class = type(kept._parser)
    real_read = parser_class.read_response
    failures = iter([True])

    def read_once_failing(self, *args, **kwargs):
        if next(failures, False):
            raise failure()
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(parser_class, "read_response", read_once_failing)
    # The first attempt's commands reached Redis (counted) but their replies were never read; the retry
    # is counted again and read on a new connection: remaining falls by two, and each reply is its own.
    second = auth_client.get("/v1/_scoped")
    assert second.status_code == 200
    assert int(second["RateLimit-Remaining"]) == int(first["RateLimit-Remaining"]) - 2
    third = auth_client.get("/v1/_scoped")
    assert int(third["RateLimit-Remaining"]) == int(second["RateLimit-Remaining"]) - 1


def _redis_timeout(message: str) -> Exception:
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return RedisTimeoutError(message)


def test_an_error_reply_is_raised_once_every_reply_of_the_round_trip_is_read():
    """A command Redis refuses (here a wrong type) raises redis-py's error for it; the commands around it ran,
    and their replies never reach the next round trip."""
    from django.core.cache import caches
    from redis.exceptions import ResponseError

    client = caches["default"]._cache.get_client(write=True)
    key = f"replies-{time.time_ns()}"
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        ratelimit.pipelined(
            client, [("INCR", key), ("HGET", key, "field"), ("INCR", key), ("EXPIRE", key, 60)]
        )
    assert ratelimit.pipelined(client, [("GET", key), ("INCR", key)]) == [b"2", 3]


def test_a_connection_with_a_health_check_keeps_its_clock():
    """A client configured with a health check interval reads its replies through redis-py's ``read_response``,
    which moves the next check on: a busy connection is not pinged between round trips."""
    import redis
    from django.conf import settings as django_settings

    client = redis.Redis.from_url(django_settings.REDIS_URL, health_check_interval=30)
    key = f"health-{time.time_ns()}"
    assert ratelimit.pipelined(client, [("INCR", key), ("EXPIRE", key, 60)]) == [1, 1]
    kept = ratelimit._thread_connection(client.connection_pool)
    first = kept.next_health_check
    time.sleep(0.05)
    assert ratelimit.pipelined(client, [("INCR", key)]) == [2]
    assert kept.next_health_check >= first + 0.05
    client.connection_pool.disconnect()


@pytest.mark.django_db(transaction=True)
def test_threads_keep_a_connection_each_and_never_read_each_others_replies():
    """Real threads counting at once, each on its own kept connection: every count is one more than the last
    one anybody saw, with no reply read by the wrong thread."""
    import threading

    _avoid_window_edge(margin=10)
    key = f"threads-{time.time_ns()}"
    per_thread, seen, connections = 200, [], set()
    lock = threading.Lock()
    start = threading.Barrier(4)

    def count():
        start.wait()
        mine = []
        for _ in range(per_thread):
            state, _found = ratelimit.hit_and_read(key=key, limit=10**9, read=[])
            mine.append(10**9 - state.remaining)
        with lock:
            seen.extend(mine)
            connections.add(id(_kept_connection()))

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(seen) == list(range(1, 4 * per_thread + 1))
    assert len(connections) == 4


def test_a_kept_connection_waits_under_the_kernels_timeout_and_a_frozen_redis_still_fails_in_time(tmp_path):
    """The kept connection has no Python timeout (which polls before every send and receive) but the kernel's,
    set again on every connect: a Redis that stops answering (SIGSTOP) fails the round trip after the socket
    timeout, once more on a new connection, then raises; once it answers again, so does the round trip."""
    import signal
    import struct

    import redis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from tests.faults.live import own_redis_server

    def kernel_timeouts(connection):
        sock = connection._sock
        received = struct.unpack("ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16))
        sent = struct.unpack("ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, 16))
        return sock.gettimeout(), received, sent

    timeout = 0.4
    with own_redis_server(tmp_path) as (server, port):
        client = redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        assert ratelimit.pipelined(client, [("INCR", "frozen"), ("EXPIRE", "frozen", 60)]) == [1, 1]
        kept = ratelimit._thread_connection(client.connection_pool)
        assert kernel_timeouts(kept) == (None, (0, 400_000), (0, 400_000))

        os.kill(server.pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises((RedisConnectionError, RedisTimeoutError)):
            ratelimit.pipelined(client, [("INCR", "frozen")])
        waited = time.monotonic() - started
        # The first attempt waits out the timeout; the second connects (the kernel still accepts) and waits
        # out the handshake's: about twice the timeout, never longer than a few.
        assert timeout <= waited < 5 * timeout

        os.kill(server.pid, signal.SIGCONT)
        assert ratelimit.pipelined(client, [("INCR", "frozen")]) in ([2], [3])
        assert ratelimit._thread_connection(client.connection_pool) is kept
        assert kernel_timeouts(kept) == (None, (0, 400_000), (0, 400_000))  # set again on the new socket
