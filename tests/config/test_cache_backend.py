"""The shared cache's backend (config.deploy.cache) and the API's pipelined round trip (config.api.ratelimit):
the values, keys and bytes Django's and redis-py's own steps give, on the real Redis."""

import warnings

import pytest
from django.core.cache import cache, caches
from django.core.cache.backends.base import CacheKeyWarning
from django.core.cache.backends.redis import RedisSerializer
from django.urls import resolve
from prometheus_client import REGISTRY

from config.api.ratelimit import packed_commands, pipelined
from config.core import metrics
from config.deploy.cache import PickleFirstSerializer

VALUES = [
    0,
    1,
    -7,
    2**70,
    True,
    False,
    None,
    1.5,
    "",
    "12",
    "-3",
    "texto é",
    b"",
    b"12",
    b"\x80\x05 bytes that look like a pickle",
    (1, "a"),
    {"k": [1, 2]},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_value_reads_back_as_djangos_serializer_reads_it(value):
    dumped = RedisSerializer().dumps(value)
    # An int is not pickled: redis-py writes it as its digits.
    stored = str(dumped).encode() if type(dumped) is int else dumped
    ours, django = PickleFirstSerializer().loads(stored), RedisSerializer().loads(stored)
    assert (type(ours), ours) == (type(django), django) == (type(value), value)


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_the_cache_keeps_every_value_as_it_was_set(value):
    assert isinstance(caches["default"]._cache._serializer, PickleFirstSerializer)
    cache.set("cache-backend:value", value, 30)
    found = cache.get("cache-backend:value", default="absent")
    assert (type(found), found) == (type(value), value)
    assert cache.get_many(["cache-backend:value"]) == {"cache-backend:value": value}


def test_set_many_keeps_every_value_with_its_expiry_in_one_round_trip(monkeypatch):
    from redis.connection import AbstractConnection

    client = caches["default"]._cache.get_client(None, write=True)
    values = {f"cache-backend:many:{i}": value for i, value in enumerate(VALUES)}
    sent: list[bytes] = []
    real = AbstractConnection.send_packed_command

    def send(self, command, *args, **kwargs):
        sent.append(b"".join(command) if isinstance(command, list) else command)
        return real(self, command, *args, **kwargs)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", send)
    cache.set_many(values, 60)
    # One write, each key SET with its expiry: no transaction, no MSET and EXPIREs apart.
    assert len(sent) == 1
    assert sent[0].count(b"\r\nSET\r\n") == len(values)
    assert b"MULTI" not in sent[0] and b"EXPIRE" not in sent[0]
    monkeypatch.setattr(AbstractConnection, "send_packed_command", real)
    found = cache.get_many(list(values))
    assert {k: (type(v), v) for k, v in found.items()} == {k: (type(v), v) for k, v in values.items()}
    for key in values:
        assert 55 < client.ttl(cache.make_and_validate_key(key)) <= 60
    cache.set_many({"cache-backend:many:kept": "x"}, None)  # no expiry, as Django's
    assert client.ttl(cache.make_and_validate_key("cache-backend:many:kept")) == -1
    cache.set_many(
        {"cache-backend:many:0": "gone", "cache-backend:many:kept": "gone"}, 0
    )  # deleted, as Django's
    assert cache.get_many(["cache-backend:many:0", "cache-backend:many:kept"]) == {}
    assert cache.set_many({}, 60) == []


def test_a_counter_counts_and_reads_as_an_int():
    cache.set("cache-backend:count", 5, 30)
    assert cache.incr("cache-backend:count") == 6
    assert cache.get("cache-backend:count") == 6


def test_a_plain_key_is_not_read_character_by_character(monkeypatch):
    backend = caches["default"]
    looked = []
    monkeypatch.setattr(backend, "validate_key", looked.append)
    key = backend.make_and_validate_key("rl:partner:ptn_x:live:1764374400")
    assert key == backend.make_key("rl:partner:ptn_x:live:1764374400")
    assert looked == []


@pytest.mark.parametrize("key", ["with space", "tab\there", "x" * 260, "del\x7f"], ids=repr)
def test_a_key_memcached_could_not_hold_still_warns(key):
    with pytest.warns(CacheKeyWarning):
        caches["default"].make_and_validate_key(key)


def test_a_key_of_printable_text_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        caches["default"].make_and_validate_key("catalog:ev:évènement-2026")


COMMANDS = [
    ("MGET", "a", b"b\x00c", "évènement"),
    ("INCR", "k"),
    ("EXPIRE", "k", 65),
    ("SET", "copy", '{"json":[1,2]}', "EX", 900),
    ("RPUSH", "list", 12345),
]


def test_the_round_trip_sends_the_bytes_redis_py_would_send():
    pool = caches["default"]._cache.get_client("k", write=True).connection_pool
    connection = pool.get_connection()
    try:
        assert b"".join(packed_commands(connection, COMMANDS)) == b"".join(connection.pack_commands(COMMANDS))
    finally:
        pool.release(connection)


def test_another_packer_packs_the_round_trip_as_it_does():
    class Connection:
        _command_packer = object()

        def pack_commands(self, commands):
            return ["its own", commands]

    assert packed_commands(Connection(), COMMANDS) == ["its own", COMMANDS]


def test_a_pipelined_round_trip_answers_each_command_in_order():
    backend = caches["default"]
    key = backend.make_and_validate_key("cache-backend:pipelined")
    client = backend._cache.get_client(key, write=True)
    replies = pipelined(
        client, [("DEL", key), ("INCR", key), ("EXPIRE", key, 30), ("MGET", key, key + ":none")]
    )
    assert replies[1:] == [1, 1, [b"1", None]]


def test_each_request_is_counted_in_its_routes_series(rf):
    request = rf.get("/v1/events")
    request.resolver_match = resolve("/v1/events")
    labels = {"status": "418", "view": request.resolver_match.route, "method": "GET"}
    name = "django_http_responses_total_by_status_view_method_total"
    latency = "django_http_requests_latency_seconds_by_view_method_count"
    before = REGISTRY.get_sample_value(name, labels) or 0
    observed = REGISTRY.get_sample_value(latency, {"view": labels["view"], "method": "GET"}) or 0

    class Answer:
        status_code = 418

    for _ in range(3):
        metrics.http_observe(request, Answer(), 0.0)
    assert REGISTRY.get_sample_value(name, labels) == before + 3
    assert REGISTRY.get_sample_value(latency, {"view": labels["view"], "method": "GET"}) == observed + 3
