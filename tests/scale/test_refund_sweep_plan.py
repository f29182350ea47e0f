"""The refund sweep's search for canceled orders whose charge was never refunded starts from the canceled
orders' index: the charges of orders that were never canceled are never walked."""

import pytest
from django.utils import timezone

from payouts.services.refunds import REFUND_SWEEP_BATCH, REFUND_SWEEP_WINDOW, refunds_never_requested

from .plans import plan_without_seq_scans

pytestmark = pytest.mark.django_db


def test_the_sweep_reads_the_canceled_orders_index():
    # The ids the sweep reads first: the canceled orders' index, each probing the index of charges whose refund was
    # never requested.
    queryset = refunds_never_requested(now=timezone.now()).values_list("pk", flat=True)[:REFUND_SWEEP_BATCH]
    sql, params = queryset.query.sql_with_params()
    plan = plan_without_seq_scans(sql, params)
    assert "order_canceled_at" in plan and "charge_refund_not_requested" in plan
    assert "Seq Scan" not in plan


def test_the_payout_runs_sweep_reads_only_the_last_days_cancels_from_that_index():
    # Every minute: a range of the canceled orders' index, so its cost follows a day's cancels, not the history.
    now = timezone.now()
    since = now - REFUND_SWEEP_WINDOW
    queryset = refunds_never_requested(now=now, since=since).values_list("pk", flat=True)[:REFUND_SWEEP_BATCH]
    sql, params = queryset.query.sql_with_params()
    plan = plan_without_seq_scans(sql, params)
    assert "order_canceled_at" in plan and "Seq Scan" not in plan
    conditions = [line for line in plan.splitlines() if "Index Cond" in line and "status_changed_at" in line]
    assert conditions and all(">=" in line and "<" in line for line in conditions), (
        plan
    )  # both bounds on the index
