"""The production shape with real processes (PostgreSQL, Redis, Celery workers): one partner's slow endpoints
never stall another partner's webhooks.

The Procfile's ``webhooks`` worker (prefork, 8 processes) and ``webhooks_slow`` worker run against queues of
this test's own. One partner has as many endpoints as there are workers, each answering one byte a second
and never finishing; while they are being tried, another partner's ping still reaches its endpoint within
5 s of its notification, and each slow attempt ends at its 15 s deadline.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from config.celery import app as celery_app
from orders.webhooks import services
from orders.webhooks.models import WebhookAttempt, WebhookDelivery
from tests.conftest import make_partner
from tests.faults.live import BIN, production_env, wait_for

from .conftest import order_notification, register
from .rawserver import RawServer, endless_drip

pytestmark = pytest.mark.django_db(transaction=True)

WORKERS = 8  # the Procfile's WEBHOOK_CONCURRENCY


def _reset_router() -> None:
    # Celery caches its router; drop it so the routes set here apply.
    celery_app.amqp._rtable = None
    celery_app.amqp.__dict__.pop("router", None)


@pytest.fixture
def lanes():
    """The two delivery queues of this test's own: this process publishes there, and so do the workers."""
    suffix = uuid.uuid4().hex[:10]
    names = {"fast": f"webhooks-{suffix}", "slow": f"webhooks_slow-{suffix}"}
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_routes)
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_routes = {
        "orders.webhooks.tasks.delivery_attempt": {"queue": names["fast"]},
        "orders.webhooks.tasks.delivery_attempt_slow": {"queue": names["slow"]},
        "orders.webhooks.tasks.*": {"queue": f"webhooks_other-{suffix}"},
    }
    _reset_router()
    yield names
    celery_app.conf.task_always_eager, celery_app.conf.task_routes = previous
    _reset_router()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for name in [*names.values(), f"webhooks_other-{suffix}"]:
        client.delete(name)
    for tag, payload in client.hgetall("unacked").items():
        if suffix.encode() in payload:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


def _worker(processes, env, *, name: str, queue: str, concurrency: int, pool: str):  # noqa: F811
    return processes.spawn(
        name,
        [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--queues",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--hostname",
            f"{name}-{uuid.uuid4().hex[:6]}@%h",
            "--loglevel",
            "INFO",
        ],  # fmt: skip
        env,
    )


def test_slow_endpoints_of_one_partner_never_delay_another_partners_first_attempt(
    processes,  # noqa: F811
    lanes,
    receiver,
):
    env = production_env(
        SECRET_KEY=settings.SECRET_KEY,
        WEBHOOK_ALLOW_HTTP="true",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        WEBHOOK_QUEUE=lanes["fast"],
        WEBHOOK_SLOW_QUEUE=lanes["slow"],
    )
    fast = _worker(processes, env, name="webhooks", queue=lanes["fast"], concurrency=WORKERS, pool="prefork")
    slow = _worker(processes, env, name="webhooks_slow", queue=lanes["slow"], concurrency=1, pool="solo")
    for worker in (fast, slow):
        assert wait_for(lambda w=worker: "ready." in w.output(), timeout=60), worker.output()[-3000:]

    stop = threading.Event()
    dripping = RawServer(endless_drip(stop=stop))
    try:
        noisy = make_partner(name="Slow Resale", email="ops@slow.example").partner
        healthy_partner = make_partner(name="Quick Resale", email="ops@quick.example").partner
        for i in range(WORKERS):
            register(noisy, dripping.url(f"/slow/{i}"))
        healthy, _ = register(healthy_partner, receiver.url())

        services.notification_fan_out(order_notification(noisy))  # 8 deliveries, published on commit
        limit = settings.WEBHOOK_PARTNER_MAX_IN_FLIGHT
        assert wait_for(lambda: dripping.connections >= limit, timeout=30), fast.output()[-3000:]

        # The rest of the slow partner's deliveries are claimed, or deferred to after the attempts in flight.
        def claimed_or_deferred():
            now = timezone.now()
            deliveries = WebhookDelivery.objects.filter(endpoint__partner=noisy)
            return all(
                d.attempts_count > 0 or (d.next_attempt_at and d.next_attempt_at > now) for d in deliveries
            )

        assert wait_for(claimed_or_deferred, timeout=30), fast.output()[-3000:]

        delays = []
        for round_ in range(2):
            before = len(receiver.requests)
            pinged = time.monotonic()
            services.endpoint_ping(endpoint=healthy)
            assert wait_for(lambda b=before: len(receiver.requests) > b, timeout=30, interval=0.01), (
                fast.output()[-3000:]
            )
            delays.append(time.monotonic() - pinged)
            in_flight = WebhookAttempt.objects.filter(endpoint__partner=noisy, status="pending").count()
            assert in_flight <= limit
            if round_ == 0:
                # Then the slow partner's first attempts end at their deadline and retry on the slow lane.
                assert wait_for(
                    lambda: (
                        WebhookAttempt.objects.filter(endpoint__partner=noisy, status="retrying").count()
                        >= limit
                    ),
                    timeout=30,
                ), fast.output()[-3000:]
                # The second round pings while their retries (after 5 s) are being sent, on the slow lane.
                assert wait_for(
                    lambda: WebhookAttempt.objects.filter(
                        endpoint__partner=noisy, number=2, status="pending"
                    ).exists(),
                    timeout=60,
                    interval=0.05,
                ), fast.output()[-3000:]
        print(f"\nhealthy endpoint's first attempt after its notification, {WORKERS} slow endpoints: "
              + ", ".join(f"{d:.2f} s" for d in delays))  # fmt: skip
        assert all(delay < 5 for delay in delays), delays

        timed_out = WebhookAttempt.objects.filter(endpoint__partner=noisy).exclude(status="pending")
        assert timed_out.count() >= limit
        for attempt in timed_out:
            assert attempt.error.startswith("timeout:"), attempt.error
            assert attempt.duration_ms <= 16_000
        # No endpoint ever had more than 2 connections; the partner never more than its limit at once.
        assert dripping.connections <= WORKERS * 2
        for worker in (fast, slow):
            assert "Traceback" not in worker.output(), worker.output()[-3000:]
    finally:
        stop.set()
        dripping.close()
