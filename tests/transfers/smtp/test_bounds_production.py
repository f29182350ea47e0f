"""The bounds of hostile mail in the production shape (docs/operations/receiving-mail.md "Receiving mail"): PostgreSQL, Redis,
one Celery worker of concurrency 2 processing what the real receiver stored. With three 1 MB signature-flood
messages in flight a genuine transfer still reaches ``ticket_received`` within 10 s; a poison message is
``processed`` within 2 minutes and never again; a PDF bomb's check ends within 10 s of decoding plus 1 s."""

from __future__ import annotations

import os
import time
import uuid
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from bench.transfers_hostile import bomb_mail, poison_nest, signature_flood
from config.celery import app as celery_app
from orders.models import Order
from orders.transfers.decision.services import reminders
from orders.transfers.intake import services as intake
from orders.transfers.models import InboundMessage, TicketFileCheck, TransferCase
from orders.transfers.testing.simulator import sandbox_sign
from tests.faults.conftest import _reset_router
from tests.faults.live import BIN, Processes, production_env, wait_for
from tests.transfers.e2e.conftest import genuine

from .conftest import smtp_send
from .test_budgets import qr_order

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def transfer_worker(tmp_path):
    """Starts (once the test's orders are made) transfer detection's tasks going through the real broker to a
    queue of this test's own, and one worker of concurrency 2 (prefork: the tasks' time limits hold) on it."""
    queue = f"transfers-{uuid.uuid4().hex[:10]}"
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_routes)
    processes = Processes(tmp_path)

    def start():
        celery_app.conf.task_always_eager = False
        celery_app.conf.task_routes = {"orders.transfers.tasks.*": {"queue": queue}}
        _reset_router()
        return processes.spawn(
            "worker",
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                "2",
                "--queues",
                queue,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--hostname",
                f"transfers-{os.getpid()}-{queue}@%h",
                "--loglevel",
                "INFO",
            ],  # fmt: skip
            production_env(MEDIA_ROOT=str(settings.MEDIA_ROOT)),  # the raw mail the receiver stored
        )

    try:
        yield start
    finally:
        processes.stop_all()
        celery_app.conf.task_always_eager, celery_app.conf.task_routes = previous
        _reset_router()
        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


def log_tail(worker) -> str:
    return "\n".join(line for line in worker.output().splitlines() if not line.strip().startswith(". "))[
        -3000:
    ]


def status_of(order: Order) -> str:
    return Order.objects.get(pk=order.pk).status


def test_hostile_mail_stays_within_its_bounds_on_one_worker(
    receiver, waiting_orders, partner, transfer_worker
):
    flooded = [waiting_orders() for _ in range(3)]
    genuine_order, poisoned = waiting_orders(), waiting_orders()
    bombed = qr_order(partner)
    worker = transfer_worker()
    assert wait_for(lambda: "ready" in worker.output(), timeout=60), log_tail(worker)

    # Three 1 MB floods handed over as a provider would (no DATA to refuse them at), then the genuine mail.
    floods = [signature_flood(genuine(order)) for order in flooded]
    assert all(len(flood) > 1_000_000 for flood in floods)
    for order, flood in zip(flooded, floods, strict=True):
        intake.message_receive(
            flood, recipients=[order.transfer_address], channel="postmark", peer="Postmark"
        )
        # Over SMTP the same bytes never get in.
        assert smtp_send(receiver, flood, [order.transfer_address])[0] == 554
    sent = time.monotonic()
    assert smtp_send(receiver, genuine(genuine_order), [genuine_order.transfer_address])[0] == 250
    assert wait_for(lambda: status_of(genuine_order) == "ticket_received", timeout=10), (
        list(TransferCase.objects.filter(order=genuine_order).values_list("summary", flat=True)),
        log_tail(worker),
    )
    took = time.monotonic() - sent
    assert took <= 10
    for order in flooded:
        message = InboundMessage.objects.get(order=order)
        assert wait_for(
            lambda m=message: InboundMessage.objects.get(pk=m.pk).stage == "processed", timeout=30
        )
        assert status_of(order) == "awaiting_transfer"

    # A poison message: processed within 2 minutes, once.
    assert smtp_send(receiver, poison_nest(poisoned.transfer_address), [poisoned.transfer_address])[0] == 250
    message = InboundMessage.objects.get(order=poisoned)
    assert wait_for(lambda: InboundMessage.objects.get(pk=message.pk).stage == "processed", timeout=120)
    message.refresh_from_db()
    assert message.outcome == "case" and message.runs == 1
    assert message.pk not in reminders.messages_process_due(now=timezone.now() + timedelta(days=1))

    # A PDF bomb: its check ends within 10 s of decoding plus 1 s, and the worker is free again.
    assert (
        smtp_send(receiver, sandbox_sign(bomb_mail(bombed.transfer_address)), [bombed.transfer_address])[0]
        == 250
    )
    assert wait_for(lambda: TicketFileCheck.objects.filter(order=bombed).exists(), timeout=60)
    check = TicketFileCheck.objects.get(order=bombed)
    assert check.details["files"][0]["reading"] == "too_slow" and check.seconds <= 11
    assert status_of(bombed) == "awaiting_transfer"
