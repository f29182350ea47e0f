"""manage.py import_catalog: CSV and JSON, upsert by external id, per-line errors."""

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from catalog.models import Event, Row, Section, Venue
from quotes.services import quote_create
from tests.conftest import make_partner
from tests.quotes.factories import quotes_written

pytestmark = [pytest.mark.django_db, pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))]

HEADER = (
    "external_id,event_name,starts_at,timezone,venue_name,city,state,country,primary_site,performers,status,"
    "section_name,section_name_display,general_admission,row_name,row_name_display,quantity,offer_price,"
    "face_value,restrictions,restriction_detail"
)
GOOD_AND_BAD = f"""{HEADER}
TM-1001,Nova Live,2031-05-01T20:00:00-04:00,America/New_York,Madison Square Garden,New York,NY,us,Ticketmaster,Nova Quartet|Red Rockets,,Lower 101,Lower Level 101,false,A,Row A,8,142.25,165.00,,
TM-1001,Nova Live,2031-05-01T20:00:00-04:00,America/New_York,Madison Square Garden,New York,NY,us,Ticketmaster,Nova Quartet|Red Rockets,,Lower 101,Lower Level 101,false,B,,6,120.50,165.00,Obstructed view|Limited view,Pillar at seats 1-4
TM-1001,Nova Live,2031-05-01T20:00:00-04:00,America/New_York,Madison Square Garden,New York,NY,us,Ticketmaster,Nova Quartet|Red Rockets,,Floor/GA,Floor GA,true,GA,,100,95,89.5,,
TM-1002,Proms Night,2031-07-14 19:30,Europe/London,Royal Albert Hall,London,,GB,axs,,,Stalls,,false,K,,4,80.00,70.00,,
TM-1003,Bad Price,2031-06-01T20:00:00Z,America/Chicago,United Center,Chicago,IL,US,seatgeek,,,101,,false,1,,4,12.345,20.00,,
TM-1004,Bad Date,next friday,America/Chicago,United Center,Chicago,IL,US,seatgeek,,,101,,false,1,,4,50.00,60.00,,
TM-1005,Bad Zone,2031-06-01T20:00:00Z,Mars/Olympus,United Center,Chicago,IL,US,seatgeek,,,101,,false,1,,4,50.00,60.00,,
TM-1006,Negative,2031-06-01T20:00:00Z,America/Chicago,United Center,Chicago,IL,US,seatgeek,,,101,,false,1,,-3,50.00,60.00,,
,No Id,2031-06-01T20:00:00Z,America/Chicago,United Center,Chicago,IL,US,seatgeek,,,101,,false,1,,4,50.00,60.00,,
TM-1001,Nova Live (renamed),2031-05-01T20:00:00-04:00,America/New_York,Madison Square Garden,New York,NY,us,Ticketmaster,Nova Quartet|Red Rockets,,Lower 101,Lower Level 101,false,C,,6,120.50,165.00,,
TM-1002,Proms Night,2031-07-14 19:30,Europe/London,Royal Albert Hall,London,,GB,axs,,,Stalls,,false,K,,9,80.00,70.00,,
"""


def run(path, *args):
    """Run the command; returns (report dict, refused-error or None)."""
    from io import StringIO

    out = StringIO()
    try:
        call_command("import_catalog", str(path), "--json", *args, stdout=out, stderr=StringIO())
        error = None
    except CommandError as exc:
        error = str(exc)
    return json.loads(out.getvalue()), error


def test_import_applies_good_lines_and_reports_each_bad_one(tmp_path):
    path = tmp_path / "catalog.csv"
    path.write_text(GOOD_AND_BAD)
    report, error = run(path)
    assert error == "7 line(s) refused; the other lines were applied."
    refused = {r["line"]: r["error"] for r in report["refused"]}
    assert sorted(refused) == [6, 7, 8, 9, 10, 11, 12]
    assert "offer_price" in refused[6]
    assert "starts_at" in refused[7]
    assert "timezone" in refused[8]
    assert "quantity" in refused[9]
    assert "external_id" in refused[10]
    assert "differ from line 2" in refused[11]
    assert "already given on line 5" in refused[12]
    assert (report["events_created"], report["rows_created"], report["lines_applied"]) == (2, 4, 4)

    nova = Event.objects.get(external_id="TM-1001")
    assert nova.name == "Nova Live"
    assert nova.primary_site == "ticketmaster"
    assert str(nova.event_date) == "2031-05-01"
    assert nova.venue.country == "US"
    assert list(nova.performers.order_by("name").values_list("name", flat=True)) == [
        "Nova Quartet",
        "Red Rockets",
    ]
    b = Row.objects.get(section__event=nova, name="B")
    assert b.name_display == "Row B"
    assert b.restrictions == ["Obstructed view", "Limited view"]
    assert b.restriction_detail == "Pillar at seats 1-4"
    assert b.offer_price == Decimal("120.50")
    ga = Section.objects.get(event=nova, name="Floor/GA")
    assert ga.general_admission and ga.rows.get().name_display == "General Admission"
    proms = Event.objects.get(external_id="TM-1002")
    # A time without offset is the venue's wall clock.
    assert proms.local_starts_at.isoformat() == "2031-07-14T19:30:00"
    assert proms.timezone == "Europe/London"
    assert not Event.objects.filter(external_id__in=["TM-1003", "TM-1004", "TM-1005", "TM-1006"]).exists()


def test_import_twice_changes_nothing_the_second_time(tmp_path):
    path = tmp_path / "catalog.csv"
    path.write_text(GOOD_AND_BAD)
    run(path)
    counts = (Event.objects.count(), Section.objects.count(), Row.objects.count(), Venue.objects.count())
    report, _ = run(path)
    assert (report["events_created"], report["events_updated"], report["events_unchanged"]) == (0, 0, 2)
    assert (report["rows_created"], report["rows_updated"], report["rows_unchanged"]) == (0, 0, 4)
    assert counts == (
        Event.objects.count(),
        Section.objects.count(),
        Row.objects.count(),
        Venue.objects.count(),
    )


def test_import_updates_an_event_by_external_id_and_keeps_the_row_quantity(tmp_path):
    first = tmp_path / "first.json"
    first.write_text(json.dumps([_item()]))
    run(first)
    event = Event.objects.get(external_id="AXS-9")
    partner = make_partner().partner
    quote = quote_create(partner_pk=partner.pk, event_id=event.event_id, section_name="Lawn", quantity=2)
    second = tmp_path / "second.json"
    second.write_text(
        json.dumps(
            {
                "rows": [
                    _item(starts_at="2031-09-02T03:30:00Z", offer_price="60.00", quantity=5),
                    _item(starts_at="2031-09-02T03:30:00Z", row_name="GA2", restrictions=["Age 21+"]),
                ]
            }
        )
    )
    report, error = run(second)
    assert error is None, report["refused"]
    assert (report["events_created"], report["events_updated"]) == (0, 1)
    assert (report["rows_created"], report["rows_updated"]) == (1, 1)
    assert report["rows_quantity_kept"] == 1
    event.refresh_from_db()
    assert event.event_id == Event.objects.get(external_id="AXS-9").event_id
    # 03:30 UTC is 20:30 the evening before in Denver.
    assert str(event.event_date) == "2031-09-01"
    row = Row.objects.get(section__event=event, name="GA")
    # New price; the quantity stays the row's (orders may have taken tickets since the first import).
    assert (row.offer_price, row.available_quantity) == (Decimal("60.00"), 50)
    assert Row.objects.get(section__event=event, name="GA2").available_quantity == 50
    quotes_written()
    quote.refresh_from_db()
    assert quote.offer_price == Decimal("45.00")  # the quote keeps its snapshot


def test_import_can_cancel_an_event(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_item()]))
    run(path)
    path.write_text(json.dumps([_item(status="canceled")]))
    report, _ = run(path)
    event = Event.objects.get(external_id="AXS-9")
    assert event.status == "canceled" and event.canceled_at is not None
    assert report["events_updated"] == 1


def test_import_json_refuses_items_that_are_not_objects(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_item(), "oops", _item(row_name="X", general_admission="maybe")]))
    report, error = run(path)
    assert error
    assert [r["line"] for r in report["refused"]] == [2, 3]
    assert "general_admission" in report["refused"][1]["error"]
    assert report["rows_created"] == 1


def test_import_dry_run_keeps_nothing(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_item()]))
    report, _ = run(path, "--dry-run")
    assert report["events_created"] == 1 and report["dry_run"] is True
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("c.txt", "x", ".csv or .json"),
        ("c.json", "{not json", "Not valid JSON"),
        ("c.json", '{"events": []}', "list of row objects"),
        ("c.csv", "name,city\nA,B\n", "CSV header lacks"),
    ],
)
def test_import_unreadable_file_is_a_command_error(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        call_command("import_catalog", str(path))
    assert not Event.objects.exists()


def test_import_missing_file_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_catalog", str(tmp_path / "nope.csv"))


def _item(**overrides):
    item = {
        "external_id": "AXS-9",
        "event_name": "Canyon Sessions",
        "starts_at": "2031-08-30T19:00:00",
        "timezone": "America/Denver",
        "venue_name": "Red Rocks Amphitheatre",
        "city": "Morrison",
        "state": "CO",
        "country": "US",
        "primary_site": "axs",
        "performers": ["The Quiet Canyons"],
        "section_name": "Lawn",
        "general_admission": True,
        "row_name": "GA",
        "quantity": 50,
        "offer_price": "45.00",
        "face_value": 55,
    }
    item.update(overrides)
    return item
