"""The portal's home and payouts pages: the dashboard's checklist and figures, the payouts list with its state
filter and totals, and its CSV export."""

from datetime import UTC, datetime

import pytest

from payouts.models import Payout
from payouts.portal.payouts import PAYOUT_CSV_HEADER
from payouts.services.progression import payouts_progress
from tests.orders.factories import make_order
from tests.portal.exports_data import csv_rows, payout_on

pytestmark = pytest.mark.django_db


def test_payouts_csv_under_the_state_filter_and_only_the_own_partner(ready_portal, other_portal):
    paid = make_order(ready_portal.partner, status="paid", partner_reference="P")
    failed = make_order(ready_portal.partner, status="ticket_received")
    theirs = make_order(other_portal.partner, status="paid")
    payout_on(paid, paid_at=datetime(2021, 5, 2, 12, 0, tzinfo=UTC))
    payout_on(
        failed,
        status="failed",
        scheduled_for=datetime(2021, 5, 3, tzinfo=UTC),
        failure_reason="=account closed",
    )
    payout_on(theirs, paid_at=datetime(2021, 5, 2, 12, 0, tzinfo=UTC))
    response = ready_portal.client.get("/portal/payouts.csv")
    assert response["Content-Disposition"].startswith('attachment; filename="payouts-')
    rows = csv_rows(response)
    assert list(rows[0]) == PAYOUT_CSV_HEADER
    by_order = {row["order_id"]: row for row in rows}
    assert set(by_order) == {paid.order_id, failed.order_id}
    assert by_order[paid.order_id] == {
        "order_id": paid.order_id,
        "amount": "170.00",
        "currency": "USD",
        "status": "paid",
        "scheduled_for": "",
        "paid_at": "2021-05-02T12:00:00+00:00",
        "account_description": "Sandbox Test Bank ••••6789 (ACH)",
        "failure_reason": "",
    }
    assert by_order[failed.order_id]["failure_reason"] == "'=account closed"
    assert by_order[failed.order_id]["scheduled_for"] == "2021-05-03T00:00:00+00:00"
    assert [
        r["order_id"] for r in csv_rows(ready_portal.client.get("/portal/payouts.csv", {"status": "failed"}))
    ] == [failed.order_id]
    assert ready_portal.client.get("/portal/payouts.csv", {"status": "bogus"}).status_code == 400


def test_dashboard_checklist_for_a_new_partner(portal):
    body = portal.client.get("/portal/").content.decode()
    assert 'data-testid="check-payout_method" data-done="false"' in body
    assert 'data-testid="check-credit_card" data-done="false"' in body
    assert "PAYOUT_METHOD_NOT_CONFIGURED" in body
    assert "2 steps left" in body


def test_dashboard_checklist_complete_with_recent_orders(ready_portal):
    order = make_order(ready_portal.partner, status="awaiting_transfer", partner_reference="my-ref-77")
    body = ready_portal.client.get("/portal/").content.decode()
    assert 'data-testid="check-payout_method" data-done="true"' in body
    assert 'data-testid="check-credit_card" data-done="true"' in body
    assert "Your account is ready to sell." in body
    assert order.order_id in body and "my-ref-77" in body


def test_payouts_list_with_state_filter(ready_portal):
    order = make_order(ready_portal.partner, status="ticket_received")
    payouts_progress()
    body = ready_portal.client.get("/portal/payouts").content.decode()
    assert order.order_id in body and "In process" in body
    assert (
        order.order_id not in ready_portal.client.get("/portal/payouts", {"status": "paid"}).content.decode()
    )


def test_payouts_of_another_partner_are_not_listed(ready_portal, two_partners):
    _, theirs = two_partners
    assert Payout.objects.filter(order=theirs).exists()
    for status in ("", "in_process"):
        body = ready_portal.client.get("/portal/payouts", {"status": status}).content.decode()
        assert theirs.order_id not in body
