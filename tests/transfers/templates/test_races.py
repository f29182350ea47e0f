"""The re-processing of an unparsed case delivered several times at once (the activation's task and the sweep,
a task redelivered): the case row lock lets one run decide; the order is received once. Two activations of
two versions of one platform at once leave one version in force. Real threads on PostgreSQL."""

import threading

import pytest
from django.db import connections

from config.celery import app as celery_app
from orders.models import Order
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from orders.transfers.pipeline.reprocess import case_reprocess
from orders.transfers.reading.services import Refused, version_activate, version_create

from .conftest import stagepass_template

pytestmark = pytest.mark.django_db(transaction=True)
V = PlatformTemplateVersion


def at_once(count: int, work) -> list:
    barrier = threading.Barrier(count)
    results = []

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(work(index))
        except Exception as exc:
            results.append(type(exc).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_a_case_processed_again_several_times_at_once_moves_the_order_once(shop):
    order = shop.order()
    case = shop.unparsed(order)
    made = version_create(
        platform="stagepass",
        data=stagepass_template(order),
        actor="staff:alice@service.example",
        reason="offers",
    )
    # The activation's task goes to the broker, where no worker runs during the test: the case waits for the
    # task and the sweep, which then run at once.
    celery_app.conf.task_always_eager = False
    try:
        version_activate(version_pk=made.pk, actor="staff:alice@service.example", reason="in force")
    finally:
        celery_app.conf.task_always_eager = True
    assert TransferCase.objects.get(pk=case.pk).state == "open"
    results = at_once(4, lambda _: case_reprocess(case_pk=case.pk))
    assert sorted(results) == ["matched", "skipped", "skipped", "skipped"]
    order.refresh_from_db()
    assert order.status == "ticket_received"
    assert order.status_history.filter(to_status="ticket_received").count() == 1
    assert TransferCase.objects.get(pk=case.pk).state == "resolved"


def test_two_versions_activated_at_once_leave_one_in_force(shop):
    base = V.objects.get(platform="stagepass", state="active").data
    drafts = [
        version_create(platform="stagepass", data=base, actor="staff:alice@service.example", reason=str(n))
        for n in range(2)
    ]

    def activate(index: int) -> str:
        try:
            return version_activate(
                version_pk=drafts[index].pk, actor=f"staff:{index}@service.example", reason="go"
            ).state
        except Refused:
            return "refused"

    results = at_once(2, activate)
    assert "active" in results, results
    assert V.objects.filter(platform="stagepass", state="active").count() == 1
    assert V.objects.filter(platform="stagepass", state="superseded").count() == len(
        [r for r in results if r == "active"]
    )
    assert Order.objects.count() == 0
