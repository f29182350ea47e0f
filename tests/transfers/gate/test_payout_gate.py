"""The payout waits for the transfer (docs/partners/orders.md "Transfer"): a mobile transfer until it is
accepted on the platform, a ticket file ``TRANSFER_FILE_PAYOUT_HOLD_HOURS`` after detection with no case
open. The gate reads the order's own fields."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from orders import outbox
from orders.models import Order
from orders.transfers.decision import state
from orders.transfers.models import TransferCase
from payouts.models import Payout
from payouts.services.progression import payouts_create_missing, payouts_progress

from .conftest import received_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock():
    with time_machine.travel(timezone.now(), tick=False) as traveller:
        yield traveller


def _has_payout(order: Order) -> bool:
    return Payout.objects.filter(order_id=order.pk).exists()


def test_a_detected_mobile_transfer_waits_for_acceptance(partner, clock):
    order = received_order(partner, delivery_type="mobile_transfer")
    clock.shift(timedelta(days=30))  # no hold releases it: only the acceptance does
    assert payouts_create_missing() == 0 and not _has_payout(order)

    state.transfer_accept(
        order=order, actor="system:transfers", reason="Accepted", reason_code=outbox.REASON_TRANSFER_ACCEPTED
    )
    assert payouts_create_missing() == 1 and _has_payout(order)


def test_staff_recording_received_and_accepted_pays_out_a_mobile_transfer(partner):
    order = received_order(partner, source="staff", accepted=True)
    payouts_progress()
    order.refresh_from_db()
    assert _has_payout(order) and order.status == "payout_in_process"


@pytest.mark.parametrize("delivery_type", ["pdf", "mobile_qr"])
def test_a_ticket_file_pays_out_after_the_hold(partner, clock, settings, delivery_type):
    assert settings.TRANSFER_FILE_PAYOUT_HOLD_HOURS == 48
    order = received_order(partner, delivery_type=delivery_type, source="file")
    clock.shift(timedelta(hours=47, minutes=59))
    assert payouts_create_missing() == 0 and not _has_payout(order)
    clock.shift(timedelta(minutes=1))
    assert payouts_create_missing() == 1 and _has_payout(order)


def test_the_hold_follows_the_setting(partner, clock, settings):
    settings.TRANSFER_FILE_PAYOUT_HOLD_HOURS = 2
    order = received_order(partner, delivery_type="pdf", source="file")
    clock.shift(timedelta(hours=1))
    assert payouts_create_missing() == 0
    clock.shift(timedelta(hours=1))
    assert payouts_create_missing() == 1 and _has_payout(order)


def test_an_open_case_holds_a_ticket_file_until_resolved(partner, clock):
    order = received_order(partner, delivery_type="pdf", source="file")
    case = state.case_open(
        order=order, kind=TransferCase.Kind.DUPLICATE_BARCODE, summary="Barcode sold twice"
    )
    clock.shift(timedelta(hours=72))
    assert payouts_create_missing() == 0 and not _has_payout(order)

    state.case_move(
        case=case, to=TransferCase.State.RESOLVED, actor="staff:ana", reason="Checked", resolution="dismissed"
    )
    assert payouts_create_missing() == 1 and _has_payout(order)


def test_an_accepted_mobile_transfer_with_no_hold_and_a_file_inside_it_are_independent(partner, clock):
    mobile = received_order(partner, delivery_type="mobile_transfer", accepted=True)
    pdf = received_order(partner, delivery_type="pdf", source="file")
    assert payouts_create_missing() == 1
    assert _has_payout(mobile) and not _has_payout(pdf)


def test_a_test_mode_order_never_gets_a_payout_even_accepted(partner):
    order = received_order(partner, accepted=True, livemode=False)
    assert order.livemode is False and order.transfer.state == "accepted"
    assert payouts_create_missing() == 0 and not _has_payout(order)
