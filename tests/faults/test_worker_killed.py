"""A Celery worker is killed (SIGKILL) in the middle of an order's confirmation: the card is charged
once and the seller gets one e-mail, once the sweeper has sent the confirmation out again."""

import uuid
from datetime import timedelta

import pytest
import redis
import time_machine
from django.conf import settings
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from config.celery import app as celery_app
from orders import tasks
from orders.models import Order, OrderStatusHistory
from payouts.models import Charge
from payouts.models.sandbox import SandboxCharge
from tests.conftest import issue_token

from .conftest import ORDER_FORM, quote_body
from .live import FakeSmtp, production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _reset_router() -> None:
    # Celery builds its router once per app and caches it; drop it so the routes set here apply.
    celery_app.amqp._rtable = None
    celery_app.amqp.__dict__.pop("router", None)


def _route(queue: str) -> None:
    celery_app.conf.task_routes = {"orders.tasks.confirm_order": {"queue": queue}}
    _reset_router()


@pytest.fixture
def worker_queue(settings):
    """Confirmation tasks go through the real broker to a queue of this test's own."""
    if not settings.REDIS_URL:
        pytest.fail("this test needs REDIS_URL (make test sets it)")
    queue = f"faults-{uuid.uuid4().hex[:10]}"
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_routes)
    celery_app.conf.task_always_eager = False
    _route(queue)
    yield queue
    celery_app.conf.task_always_eager, routes = previous
    celery_app.conf.task_routes = routes
    _reset_router()
    # The killed worker's message stays "unacked" in Redis; drop it and the queue so nothing replays it.
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(queue)
    for tag, payload in client.hgetall("unacked").items():
        if queue.encode() in payload:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


@pytest.fixture
def smtp():
    server = FakeSmtp()
    yield server
    server.close()


def test_worker_killed_during_confirmation_charges_once_and_mails_once(
    processes, worker_queue, smtp, row, creds
):
    smtp.hang.set()  # the worker will charge the card, then hang talking to the mail server
    worker = processes.celery_worker(
        production_env(EMAIL_URL=f"smtp://127.0.0.1:{smtp.port}"), queue=worker_queue
    )

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    quote = client.post("/v1/quotes", quote_body(row), format="json")
    assert quote.status_code == 201, quote.content
    response = client.post(
        "/v1/orders", {"quote_id": quote.json()["data"]["quote_id"], **ORDER_FORM}, format="multipart"
    )
    assert response.status_code == 201, response.content
    order = Order.objects.get(order_id=response.json()["data"]["order_id"])

    def mid_confirmation() -> bool:
        order.refresh_from_db()
        return order.confirmation_email_claimed_at is not None and smtp.connected.is_set()

    assert wait_for(mid_confirmation, timeout=60), worker.output()[-3000:]
    worker.kill()  # SIGKILL: no warm shutdown, no chance to ack or clean up

    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER  # charged and moved before the e-mail
    assert order.confirmation_email_sent_at is None
    assert smtp.messages == []
    assert Charge.objects.filter(order=order).count() == 1

    # Redelivery: the sweeper finds the stalled confirmation and publishes it again; here it runs in-process.
    celery_app.conf.task_always_eager = True
    later = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS + 60)
    with time_machine.travel(later, tick=False):
        assert tasks.sweep_unconfirmed_orders() == 1
        assert tasks.sweep_unconfirmed_orders() == 0
        tasks.confirm_order.delay(order.pk)  # a duplicate delivery changes nothing

    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER
    assert order.confirmation_email_sent_at is not None
    assert Charge.objects.filter(order=order).count() == 1
    assert SandboxCharge.objects.count() == 1  # the platform saw one charge too
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["seller@faulty.example"]
    moves = list(OrderStatusHistory.objects.filter(order=order).values_list("from_status", "to_status"))
    assert moves == [("", "accepted"), ("accepted", "awaiting_transfer")]
