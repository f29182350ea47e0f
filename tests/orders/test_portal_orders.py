"""The portal's orders pages: the list and its filters, one order's page, and the CSV download (the page's
filters, only the own partner's rows, cells a spreadsheet opens safely, times in the partner's zone, streamed
in constant memory and queries)."""

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

from orders.portal import ORDER_CSV_HEADER
from partners.portal import exports
from partners.portal.exports import EXPORT_CHUNK_SIZE, csv_cell
from payouts.services.progression import payouts_progress
from tests.orders.factories import make_order
from tests.portal.exports_data import clone_orders, csv_rows, order_at, payout_on

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC)),
]


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
        return {row["order_id"] for row in csv_rows(client.get("/portal/orders.csv", query))}

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
    references = {row["partner_reference"] for row in csv_rows(ready_portal.client.get("/portal/orders.csv"))}
    assert references == {'\'=HYPERLINK("http://evil.example")', "'+1+2", "'-2+3", "'@SUM(A1)"}


def test_csv_cells_keep_plain_values_and_neutralise_formulas():
    tz = ZoneInfo("Asia/Kolkata")
    assert csv_cell(Decimal("7"), tz=tz) == "7.00"
    assert csv_cell(None, tz=tz) == ""
    assert csv_cell(datetime(2026, 1, 1, tzinfo=UTC), tz=tz) == "2026-01-01T05:30:00+05:30"
    assert csv_cell("\tcmd", tz=tz) == "'\tcmd"
    assert csv_cell("a=b", tz=tz) == "a=b"


def test_a_large_export_streams_with_as_many_queries_as_a_small_one(ready_portal):
    template = make_order(ready_portal.partner, status="awaiting_transfer")
    client = ready_portal.client

    def export() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/portal/orders.csv")
            assert isinstance(response, StreamingHttpResponse)
            # Nothing is read before the body is consumed: the rows come a batch at a time.
            lines = sum(chunk.count(b"\n") for chunk in response.streaming_content)
        return lines - 1, len(queries)

    small_rows, small_queries = export()
    clone_orders(template, 3000)
    large_rows, large_queries = export()
    assert (small_rows, large_rows) == (1, 3001)
    # No query per row (the payout comes with its order): one per batch of rows.
    assert large_queries == small_queries + 3001 // exports.EXPORT_BATCH_SIZE


def test_a_large_export_is_read_a_batch_at_a_time_through_the_lists_index(ready_portal, monkeypatch):
    monkeypatch.setattr(exports, "EXPORT_BATCH_SIZE", 1000)
    clone_orders(make_order(ready_portal.partner, status="awaiting_transfer"), 3000)
    with CaptureQueriesContext(connection) as captured:
        chunks = iter(ready_portal.client.get("/portal/orders.csv").streaming_content)
        header, first = next(chunks), next(chunks)  # the header at once, then the rows a chunk at a time
        assert header.count(b"\n") == 1
        # Mid-stream, nothing is held open in the database between two batches.
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_cursors")
            assert cursor.fetchone()[0] == 0
        rest = list(chunks)
    # One write to the client per chunk of rows, not one per row: 3,001 rows in seven writes.
    assert [first.count(b"\n"), *(chunk.count(b"\n") for chunk in rest)] == [EXPORT_CHUNK_SIZE] * 6 + [1]
    lines = b"".join([first, *rest]).decode().splitlines()
    assert len({line.split(",")[0] for line in lines}) == 3001  # every order once
    # Four queries of at most 1,000 rows, each starting where the one before ended.
    batches = [q["sql"] for q in captured.captured_queries if 'FROM "orders_order"' in q["sql"]]
    assert len(batches) == 4 and all(sql.endswith("LIMIT 1000") for sql in batches)


def test_orders_list_filters(ready_portal):
    waiting = make_order(ready_portal.partner, status="awaiting_transfer", partner_reference="REF-A")
    canceled = make_order(ready_portal.partner, status="canceled", partner_reference="REF-B")
    client = ready_portal.client
    body = client.get("/portal/orders").content.decode()
    assert waiting.order_id in body and canceled.order_id in body
    body = client.get("/portal/orders", {"status": "canceled"}).content.decode()
    assert canceled.order_id in body and waiting.order_id not in body
    body = client.get("/portal/orders", {"q": "ref-a"}).content.decode()
    assert waiting.order_id in body and canceled.order_id not in body
    body = client.get("/portal/orders", {"q": canceled.order_id}).content.decode()
    assert canceled.order_id in body and waiting.order_id not in body
    body = client.get(
        "/portal/orders", {"created_from": "2000-01-01", "created_to": "2000-01-02"}
    ).content.decode()
    assert "No orders match these filters." in body
    assert client.get("/portal/orders", {"status": "bogus"}).status_code == 200


def test_order_detail_shows_history_charge_and_payout(ready_portal, settings):
    order = make_order(
        ready_portal.partner, status="ticket_received", quantity=2, offer_price=Decimal("60.00")
    )
    payouts_progress()
    body = ready_portal.client.get(f"/portal/orders/{order.order_id}").content.decode()
    assert "Payout in process" in body
    assert "$120.00" in body
    for status in ("accepted", "awaiting_transfer", "ticket_received", "payout_in_process"):
        assert f">{status}<" in body
    assert "Sandbox Test Bank ••••6789 (ACH)" in body


def test_order_detail_of_another_partner_is_not_found(ready_portal, two_partners):
    _, theirs = two_partners
    assert ready_portal.client.get(f"/portal/orders/{theirs.order_id}").status_code == 404
    assert ready_portal.client.get("/portal/orders/ord_doesnotexist").status_code == 404


def test_orders_search_cannot_reach_another_partner(ready_portal, two_partners):
    _, theirs = two_partners
    for q in (theirs.order_id, "THEIRS-1"):
        body = ready_portal.client.get("/portal/orders", {"q": q}).content.decode()
        assert f"/portal/orders/{theirs.order_id}" not in body  # (the search box echoes the query itself)
        assert "No orders match these filters." in body


def test_date_filters_mean_days_in_the_partner_zone(ready_portal):
    # 03:00 UTC on Jan 16 is still Jan 15 in New York.
    order = order_at(ready_portal.partner, datetime(2026, 1, 16, 3, 0, tzinfo=UTC))
    client = ready_portal.client
    day = {"created_from": "2026-01-16", "created_to": "2026-01-16"}
    assert order.order_id in client.get("/portal/orders", day).content.decode()  # UTC: Jan 16
    client.post("/portal/settings/preferences", {"time_zone": "America/New_York"})
    assert order.order_id not in client.get("/portal/orders", day).content.decode()
    previous_day = {"created_from": "2026-01-15", "created_to": "2026-01-15"}
    assert order.order_id in client.get("/portal/orders", previous_day).content.decode()
    # The CSV streams after the view returned; its filter still means New York days.
    export = b"".join(client.get("/portal/orders.csv", day).streaming_content).decode()
    assert order.order_id not in export
    export = b"".join(client.get("/portal/orders.csv", previous_day).streaming_content).decode()
    assert order.order_id in export and "2026-01-15T22:00:00-05:00" in export
