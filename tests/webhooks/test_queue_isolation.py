"""The Procfile's shape with real processes: a webhook endpoint that hangs holds up its own worker only.

One Celery worker consumes the webhook deliveries, another the order confirmations (as the Procfile's
``webhooks`` and ``worker`` lines do). While the first is stuck on an endpoint that answers only after
8 s, an order placed through the API is confirmed (charged, moved to ``awaiting_transfer``) at once.
"""

import time
import uuid

import pytest
import redis
from django.conf import settings
from rest_framework.test import APIClient

from config.celery import app as celery_app
from orders.models import Order
from orders.webhooks import services
from orders.webhooks.models import WebhookAttempt
from tests.conftest import issue_token
from tests.faults.conftest import ORDER_FORM, creds, quote_body, row  # noqa: F401  (fixtures)
from tests.faults.live import production_env, wait_for

from .conftest import Reply, order_notification, register

pytestmark = pytest.mark.django_db(transaction=True)


def _reset_router() -> None:
    # Celery caches its router; drop it so the routes set here apply.
    celery_app.amqp._rtable = None
    celery_app.amqp.__dict__.pop("router", None)


@pytest.fixture
def queues():
    """Both kinds of task go through the real broker, each to a queue of this test's own."""
    suffix = uuid.uuid4().hex[:10]
    names = {"webhooks": f"webhooks-{suffix}", "orders": f"orders-{suffix}"}
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_routes)
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_routes = {
        "orders.webhooks.tasks.*": {"queue": names["webhooks"]},
        # The order side: the outbox's deliveries to subscribers (the confirmation among them) and the
        # payouts tasks they start.
        "orders.tasks.*": {"queue": names["orders"]},
        "payouts.tasks.*": {"queue": names["orders"]},
    }
    _reset_router()
    yield names
    celery_app.conf.task_always_eager, celery_app.conf.task_routes = previous
    _reset_router()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for name in names.values():
        client.delete(name)


def test_a_hanging_endpoint_does_not_delay_an_order_confirmation(processes, queues, receiver, row, creds):  # noqa: F811
    # The endpoints' secrets are encrypted with a key derived from SECRET_KEY: the workers share it.
    env = production_env(
        SECRET_KEY=settings.SECRET_KEY, WEBHOOK_ALLOW_HTTP="true", WEBHOOK_ALLOW_PRIVATE_TARGETS="true"
    )
    webhooks_worker = processes.celery_worker(env, queue=queues["webhooks"], name="webhooks")
    orders_worker = processes.celery_worker(env, queue=queues["orders"], name="orders")
    receiver.default = Reply(delay=8)
    notifications = [order_notification(creds.partner) for _ in range(2)]
    register(creds.partner, receiver.url())
    for notification in notifications:
        services.notification_fan_out(notification)  # published on commit
    assert wait_for(lambda: len(receiver.requests) == 1, timeout=60), webhooks_worker.output()[-3000:]

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    quote = client.post("/v1/quotes", quote_body(row), format="json")
    assert quote.status_code == 201, quote.content
    placed = time.monotonic()
    response = client.post(
        "/v1/orders", {"quote_id": quote.json()["data"]["quote_id"], **ORDER_FORM}, format="multipart"
    )
    assert response.status_code == 201, response.content
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])

    def confirmed() -> bool:
        order.refresh_from_db()
        return order.status == Order.Status.AWAITING_TRANSFER

    assert wait_for(confirmed, timeout=30), orders_worker.output()[-3000:]
    confirmed_after = time.monotonic() - placed
    # The webhook worker is still inside the first attempt: nothing of it is recorded yet.
    still_hanging = WebhookAttempt.objects.filter(status="pending").count()
    assert still_hanging == 1, webhooks_worker.output()[-3000:]
    assert len(receiver.requests) == 1
    assert confirmed_after < 7
