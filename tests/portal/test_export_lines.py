"""The orders and payouts CSV lines PostgreSQL writes are the bytes csv_cell and csv.writer write for the same
rows: formulas neutralised, quoting, decimals, dates, and instants in the partner's zone with its offset, around
daylight-saving changes, in zones of half and three-quarter hours, and with a historical offset in seconds."""

from datetime import UTC, date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Event
from config.api.pagination import keyset_batches
from orders.models import Order
from orders.portal import ORDER_CSV_COLUMNS
from orders.selectors import LIST_ORDERING
from partners.portal import exports
from payouts.models import Payout
from payouts.portal.payouts import PAYOUT_CSV_COLUMNS
from payouts.selectors import PAYOUT_LIST_ORDERING
from tests.orders.factories import make_order
from tests.portal.exports_data import payout_on

pytestmark = pytest.mark.django_db

TRICKY = [
    "=1+2",
    "+1",
    "-1",
    "@SUM(A1)",
    "\tcmd",
    "\rcmd",
    "a,b",
    'say "hi"',
    '"',
    ",",
    "line\nbreak",
    "carriage\rreturn",
    "end\r\n",
    '=HYPERLINK("http://evil.example","x")',
    "'already quoted",
    " leading space",
    "Grüße, 日本 — ok",
    "",
    "plain",
]
INSTANTS = [
    datetime(2024, 3, 10, 6, 59, 59, 999999, tzinfo=UTC),  # just before New York's clocks go forward
    datetime(2024, 3, 10, 7, 0, 0, tzinfo=UTC),
    datetime(2024, 11, 3, 5, 30, 0, tzinfo=UTC),  # New York's repeated hour, first time
    datetime(2024, 11, 3, 6, 30, 0, 500000, tzinfo=UTC),  # and again
    datetime(2024, 4, 6, 13, 45, 0, tzinfo=UTC),  # Chatham's change
    datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(1890, 6, 1, 12, 0, 0, tzinfo=UTC),  # local mean time: offsets with seconds
]
ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "America/St_Johns", "Pacific/Chatham", "Etc/GMT+5",
         "Europe/Brussels"]  # fmt: skip


def tricky_rows(partner) -> None:
    """Orders and payouts whose every text column holds one of TRICKY, at INSTANTS, with odd amounts; one order
    without a payout (its payout's cells empty)."""
    Event.objects.filter(pk=make_order(partner).event_id).update(
        name='Show, "Live"', event_date=date(2024, 7, 4)
    )
    for number, text in enumerate(TRICKY):
        order = make_order(partner, status="scheduled", partner_reference=text[:64])
        at = INSTANTS[number % len(INSTANTS)]
        Order.objects.filter(pk=order.pk).update(
            created_at=at,
            section_name_display=text,
            row_name_display=TRICKY[-1 - number],
            seller_email=text,
            offer_price=Decimal(number) + Decimal("0.05"),
            total_price=Decimal("1234567.80") if number % 2 else Decimal("0.00"),
        )
        payout_on(order, status="paid", paid_at=at, scheduled_for=INSTANTS[-1 - number % len(INSTANTS)])
        Payout.objects.filter(order=order).update(
            failure_reason=text, account_description=TRICKY[-1 - number], currency=text[:3]
        )
    Payout.objects.filter(order__partner=partner).first().delete()


def python_bytes(queryset, *, columns, ordering, tz) -> bytes:
    """Today's lines: the values read as they are and formatted by csv_cell and csv.writer."""
    fields = [field for _, field in columns]
    rows = keyset_batches(queryset, ordering=ordering, fields=fields, size=exports.EXPORT_BATCH_SIZE)
    return "".join(exports._formatted_lines(rows, tz=tz)).encode()


@pytest.mark.parametrize("zone", ZONES)
def test_the_lines_postgresql_writes_are_the_bytes_csv_writer_writes(ready_portal, zone):
    partner = ready_portal.partner
    tricky_rows(partner)
    partner.time_zone = zone
    partner.save()
    tz = ZoneInfo(zone)
    client = ready_portal.client
    for url, queryset, columns, ordering in (
        ("/portal/orders.csv", Order.objects.filter(partner=partner), ORDER_CSV_COLUMNS, LIST_ORDERING),
        (
            "/portal/payouts.csv",
            Payout.objects.filter(partner=partner),
            PAYOUT_CSV_COLUMNS,
            PAYOUT_LIST_ORDERING,
        ),
    ):
        with CaptureQueriesContext(connection) as captured:
            body = b"".join(client.get(url).streaming_content)
        # Written by PostgreSQL, not by the fallback.
        assert any("chr(13) || chr(10)" in q["sql"] for q in captured.captured_queries), url
        header, _, lines = body.partition(b"\r\n")
        assert header == ",".join(column for column, _ in columns).encode()
        expected = python_bytes(queryset, columns=columns, ordering=ordering, tz=tz)
        assert lines.count(b"\r\n") >= len(TRICKY) - 1
        assert lines == expected, url


def _export_in(ready_portal, zone: str) -> tuple[bytes, bytes, bool]:
    """The orders export in ``zone``: its lines, today's lines (csv_cell and csv.writer) and whether PostgreSQL
    wrote them."""
    partner = ready_portal.partner
    partner.time_zone = zone
    partner.save()
    with CaptureQueriesContext(connection) as captured:
        body = b"".join(ready_portal.client.get("/portal/orders.csv").streaming_content)
    expected = python_bytes(
        Order.objects.filter(partner=partner),
        columns=ORDER_CSV_COLUMNS,
        ordering=LIST_ORDERING,
        tz=ZoneInfo(zone),
    )
    by_server = any("chr(13) || chr(10)" in q["sql"] for q in captured.captured_queries)
    return body.partition(b"\r\n")[2], expected, by_server


def test_a_zone_the_servers_tz_database_reads_otherwise_is_formatted_in_python(ready_portal, monkeypatch):
    """Builds of the tz database differ (an older one, or one without the history before 1970): where the
    server's gives the zone another offset than Python's at any fortnight from 1850 to 2040, the export is
    formatted in Python, so its bytes never depend on the server's build."""
    tricky_rows(ready_portal.partner)
    lines, expected, by_server = _export_in(ready_portal, "America/St_Johns")
    assert by_server and lines == expected
    # Python's rules for the zone moved by one second, in one fortnight of 1890: the server's no longer agree.
    real = exports._python_offsets.__wrapped__

    def one_fortnight_otherwise(key):
        offsets = list(real(key))
        offsets[(1890 - 1850) * 24 + 10] += 1
        return tuple(offsets)

    monkeypatch.setattr(exports, "_python_offsets", one_fortnight_otherwise)
    lines, expected, by_server = _export_in(ready_portal, "America/St_Johns")
    assert not by_server and lines == expected


def test_europe_amsterdam_before_1946_reads_as_python_reads_it_whatever_the_servers_build(ready_portal):
    # PostgreSQL's own build of the tz database reads Amsterdam as Brussels before 1946 (+00:17:30 in 1890),
    # Debian's as Amsterdam (+00:19:32): the export has Python's reading on either server.
    tricky_rows(ready_portal.partner)
    lines, expected, _ = _export_in(ready_portal, "Europe/Amsterdam")
    in_1890 = datetime(1890, 6, 1, 12, tzinfo=UTC).astimezone(ZoneInfo("Europe/Amsterdam")).isoformat()
    assert lines == expected and in_1890[-9:].encode() in expected


def test_a_column_the_sql_does_not_format_is_formatted_in_python(ready_portal, monkeypatch):
    # A kind without a template (a decimal of another scale, say): the whole export goes through csv_cell.
    monkeypatch.setitem(exports._SQL_BY_KIND, "CharField", None)
    tricky_rows(ready_portal.partner)
    with CaptureQueriesContext(connection) as captured:
        body = b"".join(ready_portal.client.get("/portal/orders.csv").streaming_content)
    assert not any("chr(13) || chr(10)" in q["sql"] for q in captured.captured_queries)
    _, _, lines = body.partition(b"\r\n")
    expected = python_bytes(
        Order.objects.filter(partner=ready_portal.partner),
        columns=ORDER_CSV_COLUMNS,
        ordering=LIST_ORDERING,
        tz=ZoneInfo(ready_portal.partner.time_zone),
    )
    assert lines == expected


def test_a_server_writing_intervals_in_another_style_gets_lines_formatted_in_python(ready_portal):
    # The offsets are read from the intervals' text: another style, and csv_cell formats every cell.
    partner = ready_portal.partner
    tricky_rows(partner)
    partner.time_zone = "America/St_Johns"
    partner.save()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL IntervalStyle TO 'iso_8601'")  # until the test's transaction ends
    with CaptureQueriesContext(connection) as captured:
        body = b"".join(ready_portal.client.get("/portal/orders.csv").streaming_content)
    assert not any("chr(13) || chr(10)" in q["sql"] for q in captured.captured_queries)
    _, _, lines = body.partition(b"\r\n")
    expected = python_bytes(
        Order.objects.filter(partner=partner),
        columns=ORDER_CSV_COLUMNS,
        ordering=LIST_ORDERING,
        tz=ZoneInfo("America/St_Johns"),
    )
    assert b"-03:30," in expected or b"-02:30," in expected
    assert lines == expected


def test_a_zone_postgresql_does_not_know_is_left_to_python_and_the_transaction_goes_on(ready_portal):
    from types import SimpleNamespace

    assert exports._database_writes_lines(ZoneInfo("America/St_Johns"))
    assert not exports._database_writes_lines(SimpleNamespace(key="Nowhere/Atlantis"))
    assert not exports._database_writes_lines(SimpleNamespace(key="UTC'; SELECT '1"))
    assert (
        Order.objects.filter(partner=ready_portal.partner).count() == 0
    )  # the test's transaction still works
