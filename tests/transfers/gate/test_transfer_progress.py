"""An order's transfer progress is a row of its own (``TransferProgress``, keyed by the order): none is written with
the order, the first write about its transfer makes it, and an order without one reads as the defaults everywhere
(the API, the admin's filter, the payout gate)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory

from orders.models import Order
from orders.transfers.decision import state
from orders.transfers.models import TransferCase, TransferProgress
from payouts.services.progression import payout_ready_orders

from .conftest import awaiting_order

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC)),
]

TS = Order.TransferState


def test_an_order_is_made_without_a_progress_row_and_reads_as_the_defaults(auth_client, partner):
    order = awaiting_order(partner)

    assert not TransferProgress.objects.filter(order=order).exists()
    fresh = Order.objects.get(pk=order.pk)
    transfer = fresh.transfer
    assert (transfer.state, transfer.quantity_detected, transfer.source) == (TS.NONE, 0, None)
    assert (transfer.detected_at, transfer.accepted_at, transfer.case_open) == (None, None, False)
    assert transfer._state.adding  # not a row: nothing was written
    assert auth_client.get(f"/v1/orders/{order.order_id}").json()["data"]["transfer"]["state"] == "none"


def test_the_first_transfer_write_makes_one_row_and_later_writes_update_it(partner):
    order = awaiting_order(partner)

    moved = state.transfer_transition(
        order=order,
        to=TS.PARTIAL,
        actor="system:transfers",
        reason_code="transfer_partial",
        quantity_detected=1,
    )
    assert moved.transfer.state == TS.PARTIAL
    state.transfer_transition(
        order=order, to=TS.MISMATCH, actor="system:transfers", reason_code="transfer_mismatch"
    )

    (row,) = TransferProgress.objects.filter(order=order)
    assert (row.state, row.quantity_detected) == (TS.MISMATCH, 1)
    assert list(order.transfer_history.values_list("from_status", "to_status")) == [
        (TS.NONE, TS.PARTIAL),
        (TS.PARTIAL, TS.MISMATCH),
    ]


def test_a_case_opened_on_an_order_without_a_row_makes_it_with_the_case_open(partner):
    order = awaiting_order(partner)

    state.case_open(order=order, kind=TransferCase.Kind.UNPARSED, summary="Look at it")

    assert order.transfer.case_open is True
    row = TransferProgress.objects.get(order=order)
    assert (row.state, row.case_open) == (TS.NONE, True)


def test_an_open_case_holds_the_payout_of_a_ticket_file_until_it_is_resolved(partner):
    order = awaiting_order(partner, delivery_type="pdf")
    order = state.order_receive(order=order, source="file", actor="system:transfers", reason="File read")
    later = datetime(2026, 12, 21, tzinfo=UTC)
    assert payout_ready_orders(now=later).filter(pk=order.pk).exists()

    case = state.case_open(order=order, kind=TransferCase.Kind.UNPARSED, summary="Look at it")
    assert not payout_ready_orders(now=later).filter(pk=order.pk).exists()
    state.case_move(
        case=case, to=TransferCase.State.RESOLVED, actor="staff:ana", reason="Fine", resolution="dismissed"
    )
    assert TransferProgress.objects.get(order=order).case_open is False
    assert payout_ready_orders(now=later).filter(pk=order.pk).exists()


def test_the_admins_transfer_filter_counts_an_order_without_a_row_as_none(partner, admin_user):
    untouched = awaiting_order(partner)
    partial = awaiting_order(partner)
    state.transfer_transition(
        order=partial,
        to=TS.PARTIAL,
        actor="system:transfers",
        reason_code="transfer_partial",
        quantity_detected=1,
    )
    model_admin = site._registry[Order]

    def listed(value: str) -> set[int]:
        request = RequestFactory().get("/admin/orders/order/", {"transfer_state": value, "mode": "all"})
        request.user = admin_user
        changelist = model_admin.get_changelist_instance(request)
        return set(changelist.get_queryset(request).values_list("pk", flat=True))

    assert untouched.pk in listed("none") and partial.pk not in listed("none")
    assert listed("partial") & {untouched.pk, partial.pk} == {partial.pk}
