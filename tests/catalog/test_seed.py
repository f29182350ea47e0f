"""manage.py seed_catalog: counts, the demo catalog on a fresh database, realistic contents."""

from datetime import timedelta
from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count
from django.utils import timezone

from catalog import seeding
from catalog.models import Event, Row, Section
from catalog.services import local_event_date

pytestmark = pytest.mark.django_db


def seed(*args) -> str:
    out = StringIO()
    call_command("seed_catalog", *args, stdout=out)
    return out.getvalue()


def test_seed_on_a_fresh_database_adds_the_demo_catalog_and_n_events():
    output = seed("--events", "300", "--seed", "7")
    demo = Event.objects.count() - 300
    assert demo >= 10
    assert f"Added {300 + demo} events (including {demo} demo events)" in output
    now = timezone.now()
    assert Event.objects.filter(starts_at__lt=now).exists(), "no past event"
    assert Event.objects.filter(starts_at__gt=now, starts_at__lt=now + timedelta(hours=36)).exists()
    assert not Event.objects.filter(starts_at__lt=now - timedelta(days=31)).exists()
    assert not Event.objects.filter(starts_at__gt=now + timedelta(days=181)).exists()


def test_seed_adds_n_new_events_on_every_run():
    seed("--events", "50", "--seed", "1")
    first = Event.objects.count()
    output = seed("--events", "120", "--seed", "2")
    assert Event.objects.count() == first + 120
    assert "demo" not in output
    seed("--events", "30", "--seed", "1")  # the same seed again still adds
    assert Event.objects.count() == first + 150
    assert Event.objects.values("event_id").distinct().count() == Event.objects.count()


def test_seeded_catalog_is_realistic():
    seed("--events", "400", "--seed", "3")
    assert not Event.objects.annotate(n=Count("sections")).filter(n=0).exists()
    assert not Section.objects.annotate(n=Count("rows")).filter(n=0).exists()
    assert Section.objects.filter(general_admission=True).exists()
    assert Section.objects.filter(general_admission=False).exists()
    assert Row.objects.exclude(restrictions=[]).exists()
    assert Row.objects.filter(restrictions=[]).count() > Row.objects.exclude(restrictions=[]).count()
    assert Event.objects.values("primary_site").distinct().count() >= 4
    assert Event.objects.values("venue__timezone").distinct().count() >= 5
    assert Row.objects.values("offer_price").distinct().count() > 100
    assert not Row.objects.filter(face_value__lte=0).exists()
    for event in Event.objects.order_by("?")[:50]:
        assert event.event_date == local_event_date(starts_at=event.starts_at, tz_name=event.timezone)
        assert event.primary_site == event.primary_site.lower()


def test_seeded_events_are_listed_by_the_api(auth_client):
    seed("--events", "30", "--seed", "9")
    data = auth_client.get("/v1/events?q=golden%20harbor").json()["data"]
    assert data["results"], "the demo event is findable by name"
    event_id = data["results"][0]["event_id"]
    sections = auth_client.get(f"/v1/events/{event_id}/sections").json()["data"]["results"]
    assert sections
    name = sections[0]["section_name"]
    rows = auth_client.get(f"/v1/events/{event_id}/sections/{quote(name, safe='')}/rows").json()["data"][
        "results"
    ]
    assert rows


def test_seed_rejects_a_negative_count():
    with pytest.raises(CommandError):
        seed("--events", "-1")


def test_fresh_seed_holds_the_readme_walkthrough_event_from_nine_days_ahead(auth_client):
    """docs/partners/integrating.md "Integrating": `q=skyline` from 9 days ahead, section "Lower 101", row B, two tickets."""
    seed("--events", "20", "--seed", "4")
    date_from = (timezone.now() + timedelta(days=9)).date().isoformat()
    events = auth_client.get(f"/v1/events?q=skyline&date_from={date_from}").json()["data"]["results"]
    assert [e["event_name"] for e in events] == ["The Skyline Sessions: Live"]
    event_id = events[0]["event_id"]
    sections = auth_client.get(f"/v1/events/{event_id}/sections").json()["data"]["results"]
    assert {s["section_name"] for s in sections} >= {"Lower 101", "Floor GA"}
    rows = auth_client.get(f"/v1/events/{event_id}/sections/Lower%20101/rows").json()["data"]["results"]
    assert {r["row_name"]: r["available_quantity"] >= 2 for r in rows}["B"]


def test_walkthrough_event_is_kept_two_weeks_ahead():
    first, created = seeding.walkthrough_event_ensure()
    assert created and first.starts_at > timezone.now() + timedelta(days=seeding.WALKTHROUGH_MIN_DAYS)
    again, created = seeding.walkthrough_event_ensure()
    assert (again.pk, created) == (first.pk, False)
    # Weeks later the event is too close for the walk-through's in-hand date: a new one, further ahead.
    later = first.starts_at - timedelta(days=seeding.WALKTHROUGH_MIN_DAYS - 1)
    moved, created = seeding.walkthrough_event_ensure(now=later)
    assert created and moved.pk != first.pk
    assert moved.starts_at >= later + timedelta(days=seeding.WALKTHROUGH_PLACE_DAYS - 1)
    assert Section.objects.filter(event=moved, name="Lower 101").exists()
