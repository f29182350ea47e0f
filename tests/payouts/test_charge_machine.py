"""A charge's status moves only through its machine: once the platform answered it never moves again, and
staff see why a charge failed."""

import pytest

from config.core.statemachine import IllegalStateMove
from payouts.models import Charge, ChargeStatusHistory
from payouts.services.charges import charge_transition
from payouts.services.methods import payment_methods_create_sandbox
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.payouts.charging import charge_order

from .test_refunds import DECLINED_CARD

C = Charge.Status


def _history(charge) -> list[tuple[str, str, str, str]]:
    rows = ChargeStatusHistory.objects.filter(charge=charge).order_by("at", "pk")
    return list(rows.values_list("from_status", "to_status", "actor", "reason"))


@pytest.mark.django_db
def test_a_declined_charge_records_why_it_failed():
    creds = make_partner(name="Declined Co", payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, card_number=DECLINED_CARD)
    charge = charge_order(order=make_order(creds.partner))
    assert charge.status == C.FAILED
    assert _history(charge) == [("pending", "failed", "system:charge", charge.failure_reason)]
    assert charge.failure_reason


@pytest.mark.django_db
def test_a_charge_without_a_card_on_file_records_why_it_failed():
    creds = make_partner(name="No Card Co", payment_methods=False)
    charge = charge_order(order=make_order(creds.partner))
    assert _history(charge) == [("pending", "failed", "system:charge", "No credit card on file.")]


@pytest.mark.django_db
def test_a_succeeded_charge_cannot_fail_later_and_nothing_is_written(partner):
    charge = charge_order(order=make_order(partner))
    assert charge.status == C.SUCCEEDED
    before = Charge.objects.get(pk=charge.pk)
    for to in (C.FAILED, C.PENDING, C.SUCCEEDED):
        with pytest.raises(IllegalStateMove):
            charge_transition(
                charge=charge, to=to, actor="staff:alice", reason="no", changes={"failure_reason": "no"}
            )
    after = Charge.objects.get(pk=charge.pk)
    assert (after.status, after.failure_reason, after.updated_at) == (C.SUCCEEDED, "", before.updated_at)
    assert _history(charge) == [("pending", "succeeded", "system:charge", "")]


@pytest.mark.django_db
def test_staff_see_why_a_charge_failed_in_the_admin(admin_client):
    creds = make_partner(name="No Card Co", payment_methods=False)
    charge = charge_order(order=make_order(creds.partner))
    page = admin_client.get(f"/admin/payouts/charge/{charge.pk}/change/").content.decode()
    assert "why a charge failed" in page and "No credit card on file." in page
