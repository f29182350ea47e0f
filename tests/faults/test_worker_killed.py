"""A Celery worker is killed (SIGKILL) in the middle of an order's confirmation: the card is charged
once and the seller gets one e-mail, once the sweeper has sent the confirmation out again."""

from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from config.celery import app as celery_app
from orders.models import Order, OrderStatusHistory
from payouts import tasks
from payouts.models import Charge
from payouts.sandbox.models import SandboxCharge
from tests.conftest import issue_token
from tests.orders.factories import confirmation_mail

from .conftest import ORDER_FORM, quote_body
from .live import production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


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
        return confirmation_mail(order).claimed_at is not None and smtp.connected.is_set()

    assert wait_for(mid_confirmation, timeout=60), worker.output()[-3000:]
    worker.kill()  # SIGKILL: no warm shutdown, no chance to ack or clean up

    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER  # charged and moved before the e-mail
    assert confirmation_mail(order).sent_at is None
    assert smtp.messages == []
    assert Charge.objects.filter(order=order).count() == 1

    # Redelivery: the sweeper finds the stalled confirmation and publishes it again; here it runs in-process.
    celery_app.conf.task_always_eager = True
    later = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS + 60)
    with time_machine.travel(later, tick=False):
        assert tasks.orders_requeue_unconfirmed() == 1
        assert tasks.orders_requeue_unconfirmed() == 0
        tasks.order_confirm.delay(order.pk)  # a duplicate delivery changes nothing

    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER
    assert confirmation_mail(order).sent_at is not None
    assert Charge.objects.filter(order=order).count() == 1
    assert SandboxCharge.objects.count() == 1  # the platform saw one charge too
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["seller@faulty.example"]
    moves = list(OrderStatusHistory.objects.filter(order=order).values_list("from_status", "to_status"))
    assert moves == [("", "accepted"), ("accepted", "awaiting_transfer")]
