"""An order staff mark ``ticket_received`` is paid by the service's own processes: a Celery worker and beat,
started as the Procfile starts them (no task run in the test process), as under `make run` and in a deployment."""

from __future__ import annotations

from decimal import Decimal

import pytest

from config.celery import app as celery_app
from orders import extensions
from orders.models import Order
from payouts.models import Payout
from tests.conftest import make_partner
from tests.faults.live import BIN, production_env, wait_for
from tests.orders.factories import make_order

pytestmark = pytest.mark.django_db(transaction=True)


def _status(order: Order) -> str:
    return Order.objects.values_list("status", flat=True).get(pk=order.pk)


def test_an_order_staff_mark_received_is_paid_by_the_worker_and_beat(processes, tmp_path):
    celery_app.conf.task_always_eager = False  # this test's tasks go to the broker, for the worker
    partner = make_partner(name="Paid By Beat", email="ops@beat.example").partner
    order = make_order(partner, status="awaiting_transfer", quantity=2, offer_price=Decimal("40.00"))
    # What the admin's "Mark ticket received" does, the tickets accepted on the platform.
    extensions.ticket_receipt().receive(
        order=order,
        source=Order.TransferSource.STAFF,
        actor="staff:ops",
        reason="received_by_staff",
        accepted=True,
    )
    assert _status(order) == "ticket_received"

    env = production_env(
        SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS="2",
        SANDBOX_PAYOUT_PAID_AFTER_SECONDS="4",
        PAYOUTS_PROGRESS_INTERVAL_SECONDS="1",
    )
    processes.celery_worker(env, queue="celery")
    processes.spawn(
        "beat",
        [
            str(BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(tmp_path / "beat"),
        ],
        env,
    )
    assert wait_for(lambda: _status(order) == "paid", timeout=180, interval=0.5), processes.started[
        -1
    ].output()
    history = list(order.status_history.order_by("at", "pk").values_list("to_status", flat=True))
    assert history[-3:] == ["payout_in_process", "scheduled", "paid"]
    assert Payout.objects.get(order=order).amount == Decimal("80.00")
