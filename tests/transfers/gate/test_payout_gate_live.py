"""The payout gate in the production shape: `celery -A config beat` sends the payout progression and a real
`celery -A config worker` runs it against PostgreSQL. A live mobile transfer that staff marked received without
"accepted on the platform" stays unpaid however often the job runs, and is paid out once the acceptance is
recorded."""

from __future__ import annotations

import os
import re

import pytest

from orders.models import Order
from orders.transfers.decision.state import order_receive
from orders.transfers.staff.admin.actions import order_accept
from payouts.models import Payout
from tests.faults.live import BIN, ROOT, production_env, wait_for
from tests.orders.conftest import create_order

pytestmark = pytest.mark.django_db(transaction=True)

RAN = re.compile(r"payouts\.tasks\.payouts_progress\[[^\]]+\] succeeded")


def _start(processes, name: str, command: str, env: dict[str, str], cwd) -> object:  # noqa: F811
    return processes.spawn(name, ["/bin/sh", "-c", f"exec {command}"], env, cwd=cwd)


def test_a_staff_received_mobile_transfer_is_paid_only_once_accepted_on_the_platform(
    processes,  # noqa: F811
    partner,
    tmp_path,
):
    env = production_env(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        PAYOUTS_PROGRESS_INTERVAL_SECONDS="1",
    )
    worker = _start(processes, "worker", "celery -A config worker --pool solo --loglevel INFO", env, tmp_path)
    beat = _start(processes, "beat", "celery -A config beat --loglevel INFO", env, tmp_path)
    logs = lambda: worker.output()[-3000:] + beat.output()[-2000:]  # noqa: E731

    # Committed at once, the order is confirmed on commit (tasks run in this process).
    order = Order.objects.get(pk=create_order(partner, delivery_type="mobile_transfer").pk)
    assert (order.livemode, order.status) == (True, Order.Status.AWAITING_TRANSFER)
    order = order_receive(
        order=order, source="staff", actor="staff:ops", reason="Seen in the seller's app", accepted=False
    )
    assert (order.status, order.transfer.state) == ("ticket_received", "detected")

    # The job runs again and again on the worker: the order stays received, with no payout.
    runs = len(RAN.findall(worker.output()))
    assert wait_for(lambda: len(RAN.findall(worker.output())) >= runs + 3, timeout=90), logs()
    order.refresh_from_db()
    assert order.status == Order.Status.TICKET_RECEIVED
    assert not Payout.objects.filter(order_id=order.pk).exists()

    order_accept(order=order, actor="staff:ops", reason="Accepted in the platform's app")
    assert wait_for(
        lambda: Order.objects.get(pk=order.pk).status == Order.Status.PAYOUT_IN_PROCESS, timeout=90
    ), logs()
    assert Payout.objects.filter(order_id=order.pk).count() == 1
    order.refresh_from_db()
    assert order.transfer.state == "accepted"
