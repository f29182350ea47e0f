"""How many Celery messages an order costs from its creation to its confirmation, in-process, by task name.

    DATABASE_URL=postgres://…/ps_x REDIS_URL=redis://…/N \\
      .venv/bin/python -m pytest -q -s --create-db bench/notification_messages.py

A pytest module (for its test database) run by path, never part of the suites. Orders are created as the API
creates them, committed (so the after-commit publishes run as in the web process), and every message published
(``Task.apply_async`` queues instead of reaching a broker) is then run in order, as one worker takes them, until
the queue is empty: the orders' ``order.created`` deliveries, the confirmation batches they nudge, and the
``order.status_changed`` deliveries those write. Two shapes: a burst (all the orders created before the worker
takes anything, as when orders come in faster than the queue drains) and a quiet system (each order created
once the queue is empty). It prints the messages per confirmed order, and the worker's CPU per order
(``time.process_time`` over the tasks' runs, without the broker's and Celery's own cost per message).
"""

from __future__ import annotations

import time
from collections import Counter
from unittest import mock

import pytest
from celery import Task
from django.core.cache import cache

from orders.models import Order
from tests.conftest import make_partner
from tests.orders.factories import order_of_quote, order_row
from tests.quotes.factories import QuoteFactory

ORDERS = 100


class _Queue:
    def __init__(self) -> None:
        self.queued: list[tuple[Task, tuple, dict]] = []
        self.published: Counter[str] = Counter()
        self.cpu = 0.0

    def enqueue(self, task, args=None, kwargs=None, **options):
        self.published[task.name] += 1
        self.queued.append((task, tuple(args or ()), dict(kwargs or {})))

    def work(self) -> None:
        started = time.process_time()
        while self.queued:
            task, args, kwargs = self.queued.pop(0)
            task.apply(args=args, kwargs=kwargs)
        self.cpu += time.process_time() - started


def _create(partner, row) -> Order:
    return order_of_quote(QuoteFactory(partner=partner, row=row, quantity=1))


def _report(shape: str, queue: _Queue, orders: list[Order]) -> None:
    confirmed = Order.objects.filter(
        pk__in=[o.pk for o in orders], status=Order.Status.AWAITING_TRANSFER
    ).count()
    assert confirmed == len(orders)
    total = sum(queue.published.values())
    by_task = ", ".join(
        f"{name.rsplit('.', 1)[-1]} {count / confirmed:.2f}"
        for name, count in sorted(queue.published.items())
    )
    print(
        f"\n{shape}: {confirmed} orders confirmed, {total / confirmed:.2f} messages per order ({total}: {by_task});"
        f" worker CPU {queue.cpu * 1000 / confirmed:.2f} ms per order"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("shape", ["burst", "quiet"])
def test_messages_per_confirmed_order(settings, shape):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    cache.clear()
    partner = make_partner().partner
    row = order_row(available_quantity=10 * ORDERS)
    queue = _Queue()
    orders = []

    def enqueue(task, args=None, kwargs=None, **options):
        queue.enqueue(task, args, kwargs)

    with mock.patch.object(Task, "apply_async", enqueue):
        for _ in range(ORDERS):
            orders.append(_create(partner, row))
            if shape == "quiet":
                queue.work()
        queue.work()
    _report(shape, queue, orders)
