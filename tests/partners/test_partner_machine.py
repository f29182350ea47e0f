"""A partner's status moves only through its machine: an illegal move is refused and writes nothing, staff
see who suspended or reactivated it and why, and one of many simultaneous suspensions wins."""

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from config.core.statemachine import IllegalStateMove
from partners.models import Partner, PartnerStatusHistory
from partners.services import partner_transition
from tests.confirming import post_confirmed
from tests.conftest import make_partner

pytestmark = pytest.mark.urls("tests.config.urls_probe")


def _history(partner) -> list[tuple[str, str, str, str]]:
    rows = PartnerStatusHistory.objects.filter(partner=partner).order_by("at", "pk")
    return list(rows.values_list("from_status", "to_status", "actor", "reason"))


@pytest.fixture
def staff_client(client, db):
    user = get_user_model().objects.create_superuser("alice", "alice@buyback.example", "pw-for-tests-only")
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_reactivating_an_active_partner_is_refused_and_writes_nothing(partner):
    before = Partner.objects.get(pk=partner.pk).updated_at
    with pytest.raises(IllegalStateMove):
        partner_transition(partner=partner, to=Partner.Status.ACTIVE, actor="staff:alice", reason="again")
    fresh = Partner.objects.get(pk=partner.pk)
    assert (fresh.status, fresh.updated_at) == (Partner.Status.ACTIVE, before)
    assert _history(partner) == []


def test_suspension_and_reactivation_record_the_staff_member_and_the_reason(staff_client, partner_creds):
    pk = partner_creds.partner.pk
    post_confirmed(
        staff_client,
        f"/admin/partners/partner/{pk}/suspend/",
        {"confirmed": "yes", "reason": "unpaid invoices"},
    )
    post_confirmed(
        staff_client,
        f"/admin/partners/partner/{pk}/reactivate/",
        {"confirmed": "yes", "reason": "invoices paid"},
    )
    assert _history(partner_creds.partner) == [
        ("active", "suspended", "staff:alice", "unpaid invoices"),
        ("suspended", "active", "staff:alice", "invoices paid"),
    ]
    page = staff_client.get(f"/admin/partners/partner/{pk}/change/").content.decode()
    assert "Suspensions and reactivations" in page and "unpaid invoices" in page and "invoices paid" in page


@pytest.mark.django_db
def test_a_partner_created_suspended_has_its_first_history_row():
    creds = make_partner(name="Paused Co", suspended=True, payment_methods=False)
    assert _history(creds.partner) == [("", "suspended", "system", "created suspended")]


@pytest.mark.django_db(transaction=True)
def test_simultaneous_suspensions_have_one_winner():
    partner = make_partner(name="Raced Co", payment_methods=False).partner
    count = 6
    barrier = threading.Barrier(count)
    results: list[str] = []

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            partner_transition(
                partner=Partner.objects.get(pk=partner.pk),
                to=Partner.Status.SUSPENDED,
                actor=f"staff:{index}",
                reason="race",
                changes={"suspended_reason": "race"},
            )
            results.append("moved")
        except IllegalStateMove:
            results.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results) == ["moved"] + ["refused"] * (count - 1)
    assert PartnerStatusHistory.objects.filter(partner=partner).count() == 1
