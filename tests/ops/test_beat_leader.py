"""Beat on every host is safe: of two beats started from the Procfile's line, one sends the periodic tasks and
the other waits; when the leader is killed (SIGKILL, no clean release), the other takes over within a minute."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from django.conf import settings

from tests.faults.live import Processes, wait_for

from .shape import Host, host_env, own_queues

SENT = "Sending due task payouts-progress"


@pytest.fixture
def queues():
    names = own_queues()
    yield names
    redis.Redis.from_url(settings.REDIS_URL).delete(*names.values())


def sends(host: Host) -> int:
    return host.started["beat"].output().count(SENT)


def test_of_two_beats_one_leads_and_the_other_takes_over_within_a_minute_of_its_death(tmp_path, queues):
    processes = Processes(tmp_path)
    overrides = {
        "PAYOUTS_PROGRESS_INTERVAL_SECONDS": "1",
        # Both hosts of one deployment: one key prefix, hence one lock.
        "CACHE_KEY_PREFIX": f"ops-beat-{uuid.uuid4().hex[:8]}",
    }
    hosts = []
    try:
        for name in ("host-a", "host-b"):
            env, ports = host_env(name, tmp_path, token="t", queues=queues, **overrides)
            host = Host(name, processes, env, ports)
            host.start(roles=("beat",))
            hosts.append(host)
        a, b = hosts
        assert wait_for(lambda: sends(a) + sends(b) >= 3, timeout=60), a.logs() + b.logs()
        leader, follower = (a, b) if sends(a) else (b, a)
        # For a while, every second: the leader sends, the other beat never does.
        started_at = sends(leader)
        assert wait_for(lambda: sends(leader) >= started_at + 5, timeout=30), leader.logs()
        assert sends(follower) == 0, follower.logs()

        leader.kill()
        killed_at = time.monotonic()
        assert wait_for(lambda: sends(follower) >= 1, timeout=60), follower.logs()
        took_over = time.monotonic() - killed_at
        assert took_over < 60, took_over
        print(f"the second beat took over {took_over:.1f} s after the leader was killed")
        assert "beat: leader" in follower.started["beat"].output()
    finally:
        processes.stop_all()
