"""Isolation of deliveries, with real threads on PostgreSQL: no delivery is sent twice while an attempt is in
flight, at most 2 attempts per endpoint and 4 per partner are in flight, an endpoint that keeps timing out
is deferred (not sent) and goes to the slow lane, and slow deliveries never share a queue with the sweep,
the purge and the "endpoint disabled" e-mail."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from config.celery import app as celery_app
from orders.webhooks import sending, services, tasks
from orders.webhooks.models import WebhookAttempt, WebhookDelivery
from tests.conftest import make_partner

from .conftest import Reply, order_notification, register
from .rawserver import RawServer, endless_drip


@pytest.fixture
def dripping():
    """An endpoint server that answers one byte a second and never finishes (until the test ends)."""
    stop = threading.Event()
    server = RawServer(endless_drip(stop=stop))
    yield server
    stop.set()
    server.close()


@pytest.fixture
def published(monkeypatch):
    """Every publish of a delivery, recorded (and run in-process, as the tests' eager Celery does)."""
    calls: list[dict] = []
    real = services.delivery_enqueue

    def record(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(services, "delivery_enqueue", record)
    return calls


def _in_threads(targets) -> list:
    results: list = []
    barrier = threading.Barrier(len(targets))

    def run(target):
        try:
            barrier.wait()
            results.append(target())
        except Exception as exc:  # noqa: BLE001
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def _deliveries(partner, urls: list[str], monkeypatch) -> list[WebhookDelivery]:
    """One delivery per URL (one endpoint each), due now, not sent yet."""
    monkeypatch.setattr(services, "delivery_enqueue", lambda **kwargs: True)
    for url in urls:
        register(partner, url)
    deliveries = services.notification_fan_out(order_notification(partner))
    monkeypatch.undo()
    return deliveries


@pytest.mark.django_db(transaction=True)
def test_a_delivery_in_flight_is_not_sent_again_when_its_lease_runs_out_or_the_sweep_runs(
    settings, dripping, monkeypatch
):
    settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS = 4
    partner = make_partner().partner
    [delivery] = _deliveries(partner, [dripping.url()], monkeypatch)
    first = threading.Thread(
        target=lambda: (sending.delivery_attempt(delivery_pk=delivery.pk), connection.close())
    )
    first.start()
    deadline = time.monotonic() + 10
    while dripping.connections == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert dripping.connections == 1
    # The lease runs out while the attempt is still in flight (as after a long stall), and the sweep runs.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(minutes=5)
    )
    assert delivery.pk in services.deliveries_send_due()
    results = _in_threads([lambda: sending.delivery_attempt(delivery_pk=delivery.pk)] * 3)
    first.join(30)

    assert results == [None, None, None]
    assert dripping.connections == 1
    [attempt] = WebhookAttempt.objects.filter(delivery=delivery)
    assert attempt.status == "retrying" and attempt.error.startswith("timeout:")
    delivery.refresh_from_db()
    assert delivery.attempts_count == 1
    assert delivery.next_attempt_at >= attempt.attempted_at + timedelta(seconds=5)


@pytest.mark.django_db(transaction=True)
def test_one_endpoint_has_at_most_two_attempts_in_flight(settings, dripping, monkeypatch):
    settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS = 3
    partner = make_partner().partner
    register(partner, dripping.url())
    monkeypatch.setattr(services, "delivery_enqueue", lambda **kwargs: True)
    deliveries = [services.notification_fan_out(order_notification(partner))[0] for _ in range(5)]

    results = _in_threads([lambda d=d: sending.delivery_attempt(delivery_pk=d.pk) for d in deliveries])

    assert [r for r in results if isinstance(r, Exception)] == []
    assert dripping.connections == 2
    assert WebhookAttempt.objects.count() == 2
    waiting = WebhookDelivery.objects.filter(attempts_count=0)
    assert waiting.count() == 3
    # Deferred, not failed and not counted: due again once a slot should be free.
    now = timezone.now()
    assert all(d.state == "pending" and d.next_attempt_at > now - timedelta(seconds=1) for d in waiting)


@pytest.mark.django_db(transaction=True)
def test_one_partner_has_at_most_four_attempts_in_flight(settings, dripping, receiver, monkeypatch):
    settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS = 3
    partner = make_partner().partner
    other = make_partner(name="Other Resale", email="ops@other.example").partner
    deliveries = _deliveries(partner, [dripping.url(f"/{i}") for i in range(6)], monkeypatch)
    [healthy] = _deliveries(other, [receiver.url()], monkeypatch)

    results = _in_threads(
        [lambda d=d: sending.delivery_attempt(delivery_pk=d.pk) for d in [*deliveries, healthy]]
    )

    assert [r for r in results if isinstance(r, Exception)] == []
    assert dripping.connections == settings.WEBHOOK_PARTNER_MAX_IN_FLIGHT == 4
    assert len(receiver.requests) == 1  # the other partner's endpoint was not held back
    healthy.refresh_from_db()
    assert healthy.state == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_a_slot_freed_by_an_answer_releases_a_waiting_first_attempt_at_once(receiver, monkeypatch):
    partner = make_partner().partner
    receiver.default = Reply(delay=0.5)
    register(partner, receiver.url())
    monkeypatch.setattr(services, "delivery_enqueue", lambda **kwargs: True)
    deliveries = [services.notification_fan_out(order_notification(partner))[0] for _ in range(4)]
    monkeypatch.undo()
    started = time.monotonic()

    _in_threads([lambda d=d: sending.delivery_attempt(delivery_pk=d.pk) for d in deliveries])

    # Two went at once; each answer released one of the two that waited (deferred for up to 16 s).
    assert len(receiver.requests) == 4
    assert time.monotonic() - started < 10
    assert set(WebhookDelivery.objects.values_list("state", flat=True)) == {"succeeded"}
    assert WebhookAttempt.objects.count() == 4


@pytest.mark.django_db
def test_an_endpoint_that_timed_out_is_sent_on_the_slow_lane(
    partner, receiver, published, django_capture_on_commit_callbacks
):
    endpoint, _ = register(partner, receiver.url())
    notification = order_notification(partner)
    old = services.notification_fan_out(order_notification(partner))[0]
    WebhookAttempt.objects.create(
        delivery=old,
        endpoint=endpoint,
        number=1,
        status="retrying",
        error="timeout: nothing received for 10 s",
    )
    with django_capture_on_commit_callbacks(execute=True):
        [delivery] = services.notification_fan_out(notification)

    delivery.refresh_from_db()
    # The fast lane handed it over (due now) and the slow lane sent it: one timeout is no backoff yet.
    assert published[-2:] == [
        {"delivery_pk": delivery.pk},
        {"delivery_pk": delivery.pk, "countdown": None, "slow": True},
    ]
    assert delivery.state == "succeeded"
    assert len(receiver.requests) == 1


@pytest.mark.django_db
def test_an_endpoint_that_keeps_timing_out_is_deferred_not_sent(
    partner, receiver, published, django_capture_on_commit_callbacks
):
    endpoint, _ = register(partner, receiver.url())
    old = services.notification_fan_out(order_notification(partner))[0]
    last = timezone.now() - timedelta(seconds=10)
    for number, at in [(1, last - timedelta(minutes=5)), (2, last)]:
        WebhookAttempt.objects.create(
            delivery=old, endpoint=endpoint, number=number, status="retrying", attempted_at=at,
            error="timeout: the attempt did not complete within 15 s",
        )  # fmt: skip

    with django_capture_on_commit_callbacks(execute=True):
        [delivery] = services.notification_fan_out(order_notification(partner))

    delivery.refresh_from_db()
    assert receiver.requests == []
    assert (delivery.state, delivery.attempts_count) == ("pending", 0)  # deferred: no attempt spent
    # Two timeouts in a row: left alone for a minute after the last one (plus up to 20 % jitter).
    wait = (delivery.next_attempt_at - last).total_seconds()
    assert 60 <= wait <= 72
    assert published[-1]["slow"] is True and 45 <= published[-1]["countdown"] <= 72
    assert [sending.endpoint_pause_seconds(n) for n in (1, 2, 3, 4, 8, 20)] == [0, 60, 120, 240, 1800, 1800]


@pytest.mark.django_db
def test_an_answer_ends_the_backoff(partner, receiver, published, django_capture_on_commit_callbacks):
    endpoint, _ = register(partner, receiver.url())
    old = services.notification_fan_out(order_notification(partner))[0]
    for number in (1, 2):
        WebhookAttempt.objects.create(
            delivery=old, endpoint=endpoint, number=number, status="retrying",
            attempted_at=timezone.now() - timedelta(hours=1), error="timeout: nothing received for 10 s",
        )  # fmt: skip
    WebhookAttempt.objects.create(
        delivery=old, endpoint=endpoint, number=3, status="retrying", error="http_error: HTTP 500"
    )
    assert sending.timeout_streak(endpoint.pk)[0] == 0
    with django_capture_on_commit_callbacks(execute=True):
        [delivery] = services.notification_fan_out(order_notification(partner))
    delivery.refresh_from_db()
    assert delivery.state == "succeeded"
    assert published[-1] == {"delivery_pk": delivery.pk}  # the fast lane


def test_deliveries_have_time_limits_above_the_attempts_deadline(settings):
    assert settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS == 15
    for task in (tasks.delivery_attempt, tasks.delivery_attempt_slow):
        assert 15 < task.soft_time_limit < task.time_limit
    # An attempt older than the hard limit cannot be in flight; the sweep waits longer than that.
    assert sending.in_flight_seconds() >= tasks.delivery_attempt.time_limit
    assert sending.lease_seconds() > sending.in_flight_seconds()


def test_the_sweep_purge_and_email_do_not_share_a_queue_with_deliveries():
    router = celery_app.amqp.router

    def queue_of(name: str) -> str:
        return router.route({}, name, args=(1,))["queue"].name

    assert queue_of("orders.webhooks.tasks.delivery_attempt") == "webhooks"
    assert queue_of("orders.webhooks.tasks.delivery_attempt_slow") == "webhooks_slow"
    for name in ("deliveries_send_due", "deliveries_purge", "endpoint_disabled_email"):
        assert queue_of(f"orders.webhooks.tasks.{name}") == celery_app.conf.task_default_queue
    # Declared: a worker started without --queues consumes every one of them.
    assert {q.name for q in celery_app.conf.task_queues} >= {"celery", "webhooks", "webhooks_slow"}
