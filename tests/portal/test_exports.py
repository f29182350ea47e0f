"""CSV downloads of the Orders and Payouts pages: the page's filters, only the own partner's rows, cells a
spreadsheet opens safely, times in the partner's zone, streamed in constant memory and queries."""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext

from partners.portal.exports import csv_cell
from partners.portal.orders import ORDER_CSV_HEADER
from partners.portal.payouts import PAYOUT_CSV_HEADER
from tests.payouts.factories import make_order

from .exports_data import clone_orders, order_at, payout_on

pytestmark = pytest.mark.django_db


def _csv(response) -> list[dict[str, str]]:
    assert isinstance(response, StreamingHttpResponse)
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_orders_csv_has_a_header_a_dated_file_name_and_every_column(ready_portal):
    ready_portal.partner.time_zone = "America/New_York"
    ready_portal.partner.save()
    order = order_at(
        ready_portal.partner,
        datetime(2026, 3, 1, 5, 30, tzinfo=UTC),
        status="paid",
        quantity=2,
        offer_price=Decimal("85.5"),
        partner_reference="REF-1",
    )
    payout_on(order, paid_at=datetime(2026, 3, 20, 16, 0, 5, tzinfo=UTC))
    with time_machine.travel(datetime(2026, 3, 21, 3, 0, tzinfo=UTC)):  # still Mar 20 in New York
        response = ready_portal.client.get("/portal/orders.csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="orders-2026-03-20.csv"'
    assert response["Cache-Control"] == "no-store"
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines()[0] == ",".join(ORDER_CSV_HEADER)
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert row == {
        "order_id": order.order_id,
        "partner_reference": "REF-1",
        "status": "paid",
        "created_at": "2026-03-01T00:30:00-05:00",  # EST, the partner's zone, with the offset
        "event_name": order.event.name,
        "event_date": order.event.event_date.isoformat(),
        "section": order.section_name_display,
        "row": order.row_name_display,
        "quantity": "2",
        "offer_price": "85.50",
        "total_price": "171.00",
        "delivery_type": "mobile_transfer",
        "in_hand_date": order.in_hand_date.isoformat(),
        "seller_email": "",
        "payout_status": "paid",
        "payout_amount": "171.00",
        "payout_paid_at": "2026-03-20T12:00:05-04:00",  # EDT after the March change
    }


def test_orders_csv_honours_the_page_filters_and_never_shows_another_partner(ready_portal, other_portal):
    waiting = make_order(ready_portal.partner, status="awaiting_transfer", partner_reference="REF-A")
    canceled = make_order(ready_portal.partner, status="canceled", partner_reference="REF-B")
    theirs = make_order(other_portal.partner, status="canceled", partner_reference="REF-A-THEIRS")
    client = ready_portal.client

    def ids(query: dict) -> set[str]:
        return {row["order_id"] for row in _csv(client.get("/portal/orders.csv", query))}

    assert ids({}) == {waiting.order_id, canceled.order_id}
    assert ids({"status": "canceled"}) == {canceled.order_id}
    assert ids({"q": "ref-a"}) == {waiting.order_id}
    assert ids({"q": theirs.order_id}) == set()
    assert ids({"created_from": "2000-01-01", "created_to": "2000-01-02"}) == set()
    # The page's "page" parameter does not narrow the export.
    assert ids({"status": "canceled", "page": "2"}) == {canceled.order_id}


def test_orders_csv_with_invalid_filters_answers_400_with_the_errors_not_everything(ready_portal):
    make_order(ready_portal.partner, status="accepted")
    response = ready_portal.client.get(
        "/portal/orders.csv", {"status": "bogus", "created_from": "31/31/2026"}
    )
    assert response.status_code == 400
    assert not isinstance(response, StreamingHttpResponse)
    body = response.content.decode()
    assert "Select a valid choice." in body and "Enter a valid date." in body


def test_the_download_link_carries_the_page_filters(ready_portal):
    assert b'href="/portal/orders.csv"' in ready_portal.client.get("/portal/orders").content
    body = ready_portal.client.get("/portal/orders", {"status": "paid", "q": "x y", "page": "3"}).content
    assert b'href="/portal/orders.csv?status=paid&amp;q=x+y"' in body
    body = ready_portal.client.get("/portal/payouts", {"status": "failed"}).content
    assert b'href="/portal/payouts.csv?status=failed"' in body


def test_a_cell_a_spreadsheet_would_run_as_a_formula_gets_a_leading_quote(ready_portal):
    for reference in ('=HYPERLINK("http://evil.example")', "+1+2", "-2+3", "@SUM(A1)"):
        make_order(ready_portal.partner, partner_reference=reference)
    references = {row["partner_reference"] for row in _csv(ready_portal.client.get("/portal/orders.csv"))}
    assert references == {'\'=HYPERLINK("http://evil.example")', "'+1+2", "'-2+3", "'@SUM(A1)"}


def test_csv_cells_keep_plain_values_and_neutralise_formulas():
    tz = ZoneInfo("Asia/Kolkata")
    assert csv_cell(Decimal("7"), tz=tz) == "7.00"
    assert csv_cell(None, tz=tz) == ""
    assert csv_cell(datetime(2026, 1, 1, tzinfo=UTC), tz=tz) == "2026-01-01T05:30:00+05:30"
    assert csv_cell("\tcmd", tz=tz) == "'\tcmd"
    assert csv_cell("a=b", tz=tz) == "a=b"


def test_payouts_csv_under_the_state_filter_and_only_the_own_partner(ready_portal, other_portal):
    paid = make_order(ready_portal.partner, status="paid", partner_reference="P")
    failed = make_order(ready_portal.partner, status="ticket_received")
    theirs = make_order(other_portal.partner, status="paid")
    payout_on(paid, paid_at=datetime(2026, 5, 2, 12, 0, tzinfo=UTC))
    payout_on(
        failed,
        status="failed",
        scheduled_for=datetime(2026, 5, 3, tzinfo=UTC),
        failure_reason="=account closed",
    )
    payout_on(theirs, paid_at=datetime(2026, 5, 2, 12, 0, tzinfo=UTC))
    response = ready_portal.client.get("/portal/payouts.csv")
    assert response["Content-Disposition"].startswith('attachment; filename="payouts-')
    rows = _csv(response)
    assert list(rows[0]) == PAYOUT_CSV_HEADER
    by_order = {row["order_id"]: row for row in rows}
    assert set(by_order) == {paid.order_id, failed.order_id}
    assert by_order[paid.order_id] == {
        "order_id": paid.order_id,
        "amount": "170.00",
        "currency": "USD",
        "status": "paid",
        "scheduled_for": "",
        "paid_at": "2026-05-02T12:00:00+00:00",
        "account_description": "Sandbox Test Bank ••••6789 (ACH)",
        "failure_reason": "",
    }
    assert by_order[failed.order_id]["failure_reason"] == "'=account closed"
    assert by_order[failed.order_id]["scheduled_for"] == "2026-05-03T00:00:00+00:00"
    assert [
        r["order_id"] for r in _csv(ready_portal.client.get("/portal/payouts.csv", {"status": "failed"}))
    ] == [failed.order_id]
    assert ready_portal.client.get("/portal/payouts.csv", {"status": "bogus"}).status_code == 400


def test_a_large_export_streams_with_as_many_queries_as_a_small_one(ready_portal):
    template = make_order(ready_portal.partner, status="awaiting_transfer")
    client = ready_portal.client

    def export() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/portal/orders.csv")
            assert isinstance(response, StreamingHttpResponse)
            # Nothing is read before the body is consumed: the rows come from a server-side cursor.
            lines = sum(chunk.count(b"\n") for chunk in response.streaming_content)
        return lines - 1, len(queries)

    small_rows, small_queries = export()
    clone_orders(template, 3000)
    large_rows, large_queries = export()
    assert (small_rows, large_rows) == (1, 3001)
    assert large_queries == small_queries  # no query per row (the payout comes with its order)

    # Mid-stream, the rows are read through a PostgreSQL server-side cursor, a chunk at a time.
    chunks = iter(client.get("/portal/orders.csv").streaming_content)
    next(chunks), next(chunks)  # the header and the first row
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_cursors WHERE name LIKE '_django_curs_%%'")
        assert cursor.fetchone()[0] == 1
    assert sum(1 for _ in chunks) == 3000
