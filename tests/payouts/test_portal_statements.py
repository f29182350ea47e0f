"""The monthly statement: figures against a known data set, month bounds in the partner's time zone
(New York: UTC−5 in winter, −4 from March 8, 2026), navigation, the CSV of the month's lines."""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import time_machine

from payouts.selectors.statements import statement_figures, statement_month
from tests.portal.exports_data import charge_on, order_at, payout_on

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC)),
]
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def month_data(ready_portal, other_portal):
    """Orders, charges, refunds and payouts around March 2026 in New York; the comments say which month
    each falls in there (and where UTC would put it otherwise)."""
    partner = ready_portal.partner
    partner.time_zone = "America/New_York"
    partner.save()
    feb = order_at(partner, utc(2026, 3, 1, 4, 30), status="paid", partner_reference="FEB")  # Feb 28 23:30
    charge_on(feb, at=utc(2026, 3, 1, 4, 31))  # February
    payout_on(feb, paid_at=utc(2026, 3, 1, 4, 45))  # February: 170.00
    first = order_at(partner, utc(2026, 3, 1, 5, 30), status="awaiting_transfer", partner_reference="B")
    charge_on(first, at=utc(2026, 3, 1, 5, 31))  # March: 170.00
    payout_on(first, status="scheduled", scheduled_for=utc(2026, 3, 20))  # not paid: not on the statement
    canceled = order_at(partner, utc(2026, 3, 31, 23, 30), status="canceled", partner_reference="C")
    # Charged in March, refunded Mar 31 23:59 New York time (April in UTC).
    charge_on(canceled, at=utc(2026, 3, 10), refunded_at=utc(2026, 4, 1, 3, 59))
    last = order_at(
        partner,
        utc(2026, 4, 1, 3, 30),  # Mar 31 23:30 in New York (EDT)
        status="paid",
        quantity=3,
        offer_price=Decimal("50.00"),
        partner_reference="D",
    )
    charge_on(last, at=utc(2026, 4, 1, 3, 31))  # March: 150.00
    payout_on(last, paid_at=utc(2026, 4, 1, 3, 45))  # March: 150.00
    declined = order_at(
        partner, utc(2026, 3, 15, 12), status="accepted", quantity=1, offer_price=Decimal("99.00")
    )
    charge_on(declined, at=utc(2026, 3, 15, 12, 1), status="failed")  # a failed charge is no money
    april = order_at(
        partner, utc(2026, 4, 1, 4, 30), status="accepted", partner_reference="APR"
    )  # Apr 1 00:30
    charge_on(april, at=utc(2026, 4, 1, 4, 31))
    theirs = order_at(other_portal.partner, utc(2026, 3, 15), status="paid", partner_reference="THEIRS")
    charge_on(theirs, at=utc(2026, 3, 15))
    payout_on(theirs, paid_at=utc(2026, 3, 16))
    return {"feb": feb, "first": first, "canceled": canceled, "last": last, "theirs": theirs}


def test_each_figure_of_march_in_new_york(ready_portal, month_data):
    month = statement_month(year=2026, month=3, tz=NEW_YORK)
    assert (month.start, month.end) == (utc(2026, 3, 1, 5), utc(2026, 4, 1, 4))
    figures = statement_figures(partner_pk=ready_portal.partner.pk, month=month)
    assert figures.orders == 4  # B, C (canceled), D, the declined one
    assert figures.tickets == 2 + 3 + 1
    assert figures.bought == Decimal("170.00") + Decimal("150.00") + Decimal("99.00")
    assert figures.charged == Decimal("490.00")  # B, C, D
    assert figures.refunded == Decimal("170.00")  # C
    assert figures.paid_out == Decimal("150.00")  # D


def test_the_same_instants_in_utc_fall_in_other_months(ready_portal, month_data):
    month = statement_month(year=2026, month=3, tz=ZoneInfo("UTC"))
    figures = statement_figures(partner_pk=ready_portal.partner.pk, month=month)
    assert figures.orders == 4  # FEB, B, C, declined (not D)
    assert figures.paid_out == Decimal("170.00")  # FEB, not D
    assert figures.refunded == Decimal("0.00")  # C's refund is April in UTC


def test_statement_page_shows_the_figures_and_the_payouts_paid(ready_portal, month_data):
    response = ready_portal.client.get("/portal/statements/2026-03")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="statement-month">March 2026<' in body
    assert 'data-testid="orders-created">4<' in body
    assert 'data-testid="tickets">6<' in body
    assert 'data-testid="bought">$419.00<' in body
    assert 'data-testid="charged">$490.00<' in body
    assert 'data-testid="refunded">$170.00<' in body
    assert 'data-testid="paid-out">$150.00<' in body
    table = body.split('data-testid="statement-payouts"')[1].split("</table>")[0]
    assert month_data["last"].order_id in table and "Mar 31, 2026 23:45 EDT" in table
    assert month_data["feb"].order_id not in table and month_data["first"].order_id not in table
    assert month_data["theirs"].order_id not in body and "THEIRS" not in body
    assert "Mar 1, 2026 00:00 EST" in body and "Apr 1, 2026 00:00 EDT" in body
    assert 'href="/portal/statements/2026-02"' in body and 'href="/portal/statements/2026-04"' in body
    assert 'href="/portal/statements/2026-03.csv"' in body


def test_statement_without_a_month_is_the_current_month_in_the_partner_zone(ready_portal, month_data):
    # Apr 1, 02:00 UTC is still March 31 in New York.
    with time_machine.travel(utc(2026, 4, 1, 2), tick=False):
        body = ready_portal.client.get("/portal/statements").content.decode()
    assert 'data-testid="statement-month">March 2026<' in body
    assert 'data-testid="paid-out">$150.00<' in body


def test_year_boundaries_and_unknown_months(ready_portal):
    body = ready_portal.client.get("/portal/statements/2026-01").content.decode()
    assert 'href="/portal/statements/2025-12"' in body and 'href="/portal/statements/2026-02"' in body
    body = ready_portal.client.get("/portal/statements/2025-12").content.decode()
    assert 'href="/portal/statements/2026-01"' in body
    assert "No payout was paid this month." in body
    for bad in ("2026-13", "2026-00", "0000-05", "0001-01", "9999-12", "2026-13.csv", "2026-1", "26-01"):
        assert ready_portal.client.get(f"/portal/statements/{bad}").status_code == 404, bad


def test_statement_csv_lists_the_month_lines_in_time_order(ready_portal, month_data):
    response = ready_portal.client.get("/portal/statements/2026-03.csv")
    assert response["Content-Disposition"] == 'attachment; filename="statement-2026-03.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    first, canceled, last = month_data["first"], month_data["canceled"], month_data["last"]
    lines = [(row["at"], row["type"], row["order_id"], row["amount"]) for row in rows]
    declined = [row["order_id"] for row in rows if row["type"] == "order" and row["amount"] == "99.00"][0]
    assert lines == [
        ("2026-03-01T00:30:00-05:00", "order", first.order_id, "170.00"),
        ("2026-03-01T00:31:00-05:00", "charge", first.order_id, "170.00"),
        ("2026-03-09T20:00:00-04:00", "charge", canceled.order_id, "170.00"),
        ("2026-03-15T08:00:00-04:00", "order", declined, "99.00"),
        ("2026-03-31T23:30:00-04:00", "order", last.order_id, "150.00"),
        ("2026-03-31T23:31:00-04:00", "charge", last.order_id, "150.00"),
        ("2026-03-31T23:45:00-04:00", "payout", last.order_id, "150.00"),
        ("2026-03-31T23:59:00-04:00", "refund", canceled.order_id, "170.00"),
    ]
    assert {row["currency"] for row in rows} == {"USD"}
    assert rows[1]["detail"] == "Visa ••••4242"
    assert rows[6]["detail"] == "Sandbox Test Bank ••••6789 (ACH)"
