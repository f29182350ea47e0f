"""Nothing is lost when the broker is down: 201 at once, and the sweepers publish the confirmation later."""

import time
from datetime import timedelta

import pytest
import time_machine
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from django.core import mail
from django.utils import timezone
from kombu import pools as kombu_pools

from config.celery import app as celery_app
from orders import dispatch, tasks
from orders.models import Notification, NotificationReceipt, Order
from payouts import tasks as payouts_tasks
from payouts.lifecycle import confirmation
from payouts.models import Charge
from tests.orders.factories import confirmation_mailed

from .conftest import order_form, post_order

pytestmark = pytest.mark.django_db(transaction=True)

DEAD_BROKER = "redis://127.0.0.1:1/0"


def _use_broker(url: str) -> None:
    """Point the Celery app at ``url`` and drop the connections it pooled for the previous one."""
    kombu_pools.reset()  # kombu keeps one pool per broker URL, process-wide
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url


@pytest.fixture
def real_broker():
    """Tasks go through the broker (not in-process); restored afterwards."""
    previous = celery_app.conf.broker_url
    celery_app.conf.task_always_eager = False
    yield settings.CELERY_BROKER_URL
    _use_broker(previous)


def _purge_queue() -> None:
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")


def _wait_for(predicate, timeout: float = 20.0) -> bool:
    # Waits for the worker thread, not for the clock: time in the service is moved with time-machine.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_broker_outage_still_creates_the_order_and_the_sweeper_confirms_it_once(
    auth_client, quote, real_broker
):
    assert real_broker.startswith("redis://"), "this test needs REDIS_URL (a real broker)"
    _use_broker(DEAD_BROKER)

    started = time.monotonic()
    response = post_order(auth_client, order_form(quote, seller_email="seller@example.org"))
    elapsed = time.monotonic() - started

    assert response.status_code == 201, response.content
    # The failed publish is logged, not waited on: it gives up within about 2 s (one retry of a 1 s connect),
    # where an unbounded one would retry for good. The margin is for a busy machine.
    assert elapsed < 10, elapsed
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])
    assert order.status == Order.Status.ACCEPTED
    assert order.confirmation_started_at is None
    assert mail.outbox == []

    created = Notification.objects.get(order=order, type="order.created")
    assert created.dispatched_at is None  # its delivery never reached the broker

    _use_broker(real_broker)
    _purge_queue()
    # Within the grace period the sweepers leave it alone (its message may still be on the way).
    assert tasks.notifications_dispatch_pending() == 0
    assert payouts_tasks.orders_requeue_unconfirmed() == 0

    # Past the outbox's grace (but not yet the confirmation sweep's): the outbox hands order.created over.
    later = timezone.now() + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 5)
    assert later < timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_GRACE_SECONDS)
    with time_machine.travel(later, tick=True):
        assert tasks.notifications_dispatch_pending() == 1
        assert tasks.notifications_dispatch_pending() == 0  # published once, not every minute
        with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            assert _wait_for(lambda: len(mail.outbox) == 1)
            assert _wait_for(lambda: confirmation_mailed([order]) == {order.pk})
        assert payouts_tasks.orders_requeue_unconfirmed() == 0

    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER
    assert Charge.objects.filter(order=order).count() == 1
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["seller@example.org"]


def test_sweeper_also_retries_a_confirmation_that_stalled(auth_client, quote, real_broker, monkeypatch):
    _use_broker(DEAD_BROKER)
    response = post_order(auth_client, order_form(quote))
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])
    # An attempt began (a worker took the message) and then died without finishing.
    Order.objects.filter(pk=order.pk).update(confirmation_started_at=timezone.now())
    published = []

    monkeypatch.setattr(confirmation, "publish", lambda name, order_pk: published.append(order_pk) or True)

    def requeue(now=None):
        return confirmation.orders_requeue_unconfirmed(now=now)

    assert requeue() == []
    grace = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_GRACE_SECONDS + 1)
    assert requeue(now=grace) == []  # started recently: not stale yet
    stale = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS + 1)
    assert requeue(now=stale) == [order.pk]
    assert published == [order.pk]
    assert requeue(now=stale + timedelta(seconds=60)) == []


def test_broker_down_while_an_order_is_created_and_canceled_loses_no_notification(
    auth_client, quote, real_broker
):
    from orders import signals
    from orders.services import order_transition

    received = []
    signals.subscribe(
        "tests.recorder", handler=lambda n: received.append((n.type, n.payload["data"]["previous_status"]))
    )
    try:
        _use_broker(DEAD_BROKER)
        data = post_order(auth_client, order_form(quote)).json()["data"]
        order = Order.objects.get(order_id=data["order_id"])
        order_transition(order=order, to="awaiting_transfer", actor="staff:test", reason="Checked by hand")
        assert auth_client.post(f"/v1/orders/{data['order_id']}/cancel").status_code == 200
        assert Notification.objects.filter(order=order, dispatched_at__isnull=True).count() == 3

        _use_broker(real_broker)
        _purge_queue()
        later = timezone.now() + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 5)
        with time_machine.travel(later, tick=True):
            assert tasks.notifications_dispatch_pending() == 3
            assert tasks.notifications_dispatch_pending() == 0
            with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
                assert _wait_for(lambda: len(received) >= 3)
                # Published again (as after a lost acknowledgement): the subscriber is not run twice.
                for n in Notification.objects.filter(order=order):
                    services_outbox_dispatch(n)
                assert _wait_for(
                    lambda: NotificationReceipt.objects.filter(subscriber="tests.recorder").count() == 3
                )
                time.sleep(0.5)  # let the repeat deliveries finish (they must change nothing)
        assert sorted(received) == [
            ("order.created", None),
            ("order.status_changed", "accepted"),
            ("order.status_changed", "awaiting_transfer"),
        ]
        assert not Notification.objects.filter(order=order, dispatched_at__isnull=True).exists()
        assert not Charge.objects.filter(order=order).exists()  # canceled before any confirmation ran
    finally:
        signals.unsubscribe("tests.recorder")


def services_outbox_dispatch(notification) -> None:

    assert dispatch.notification_dispatch(
        notification_pk=notification.pk, notification_type=notification.type
    )
