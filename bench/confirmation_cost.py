"""What confirming an order costs the worker, in-process: SQL statements and CPU per confirmed order.

    DATABASE_URL=postgres://…/ps_x REDIS_URL=redis://…/N \\
      .venv/bin/python -m pytest -q -s --create-db bench/confirmation_cost.py

A pytest module (for its test database) run by path, never part of the suites. It makes ``ORDERS`` orders as
order creation leaves them (``accepted``, each with its undelivered ``order.created`` notification, on the
partner's sandbox card; a quarter in test mode), then hands each notification to the confirmation's subscriber
(``payouts.confirmation``) as the notification's delivery task does, and runs the tasks that published, in
order, as a worker takes them from the broker, until every order is confirmed: charged, moved to
``awaiting_transfer`` with its history and ``order.status_changed`` notification, and its seller e-mailed
(Django's locmem mail backend; templates rendered without the test environment's instrumentation). It prints
the statements (Django's ``CaptureQueriesContext``) and the process CPU time (``time.process_time``, a pass of
its own without the capture) per confirmed order. The after-commit work (publishing the next notifications'
deliveries) does not run here: it is the same either way.
"""

from __future__ import annotations

import time
from unittest import mock

import pytest
from celery import Task
from django.core import mail
from django.core.cache import cache
from django.db import connection
from django.template.base import Template
from django.test.utils import CaptureQueriesContext

from orders import delivery
from orders.models import Notification, Order
from tests.conftest import make_partner
from tests.orders.factories import make_orders

ORDERS = 200


def _orders(count: int) -> list[Order]:
    """``count`` orders of one partner, a quarter of them in test mode."""
    partner = make_partner().partner
    tests = count // 4
    return make_orders(count - tests, partner=partner) + make_orders(tests, partner=partner, livemode=False)


def _confirm_all(orders: list[Order]) -> None:
    """Deliver each order's ``order.created`` to the confirmation's subscriber, then run what that published, in
    order, as one worker takes its messages (``Task.apply_async`` queues instead of reaching a broker)."""
    created = (
        Notification.objects.filter(order__in=orders, type=Notification.Type.ORDER_CREATED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    queued: list[tuple[Task, tuple, dict]] = []

    def enqueue(task, args=None, kwargs=None, **options):
        queued.append((task, tuple(args or ()), dict(kwargs or {})))

    with mock.patch.object(Task, "apply_async", enqueue):
        for pk in list(created):
            delivery.notification_deliver(notification_pk=pk, subscriber_name="payouts.confirmation")
        while queued:
            task, args, kwargs = queued.pop(0)
            task.apply(args=args, kwargs=kwargs)


def _confirmed(orders: list[Order]) -> int:
    return Order.objects.filter(pk__in=[o.pk for o in orders], status=Order.Status.AWAITING_TRANSFER).count()


@pytest.fixture
def templates_as_deployed():
    """Templates rendered as in a worker, without the test environment's instrumentation (a signal and a
    copy of the context per render)."""
    from django.test.utils import _TestState

    instrumented = Template._render
    Template._render = _TestState.saved_data.template_render
    yield
    Template._render = instrumented


@pytest.mark.django_db
def test_confirmation_cost_per_order(settings, templates_as_deployed):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    cache.clear()
    # CPU without the statements' capture (which costs CPU of its own), then the statements on fresh orders.
    orders = _orders(ORDERS)
    mail.outbox = []
    started = time.process_time()
    _confirm_all(orders)
    cpu = time.process_time() - started
    confirmed = _confirmed(orders)
    assert confirmed == len(orders) == len(mail.outbox)

    orders = _orders(ORDERS)
    mail.outbox = []
    with CaptureQueriesContext(connection) as queries:
        _confirm_all(orders)
    assert _confirmed(orders) == len(orders) == len(mail.outbox)
    statements = len(queries.captured_queries)
    print(
        f"\n{len(orders)} orders confirmed, each e-mailed: {statements / len(orders):.2f} statements "
        f"({statements}) and {cpu * 1000 / confirmed:.2f} ms of CPU ({cpu:.3f} s) per confirmed order"
    )
