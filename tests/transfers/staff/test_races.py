"""Two staff members (or two tabs) confirm the same case at once: the case row lock lets one act; the other
finds the case resolved and changes nothing. Real threads on PostgreSQL."""

import threading

import pytest
from django.db import connections

from orders.models import Order, OrderStatusHistory
from orders.transfers.models import TransferCaseHistory
from orders.transfers.staff.admin.actions import ACTIONS, Refused, case_act
from tests.conftest import make_partner
from tests.orders.factories import make_order

from .fixtures import mismatch_case

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("name", ["mark_received", "dismiss"])
def test_concurrent_confirmations_of_a_case_act_once(name):
    order = make_order(make_partner(name="Race Resale").partner, status="awaiting_transfer")
    case = mismatch_case(order)
    barrier = threading.Barrier(6)
    results = []

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(
                case_act(case_pk=case.pk, action=ACTIONS[name], actor=f"staff:{index}", reason="seen")
            )
        except Refused:
            results.append("refused")
        except Exception as exc:
            results.append(type(exc).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results.count("refused") == 5 and len(results) == 6
    assert TransferCaseHistory.objects.filter(case=case, to_status="resolved").count() == 1
    received = OrderStatusHistory.objects.filter(order=order, to_status="ticket_received").count()
    assert received == (1 if name == "mark_received" else 0)
    assert Order.objects.get(pk=order.pk).transfer.case_open is False
