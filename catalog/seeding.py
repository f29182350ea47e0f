"""A realistic generated catalog for demos, development and load tests (``manage.py seed_catalog``).

Each run adds ``events`` new events (bulk inserts in batches, so 100,000 take seconds, not minutes). On a
database without any event it first adds a hand-made demo catalog: events from 30 days ago to 180 days
ahead, at least one already past and one starting within 36 hours, reserved and general-admission
sections, and restrictions on some rows, and the walk-through's event (README "The partner flow") (``walkthrough_event_ensure``).
"""

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from datetime import time as dtime
from zoneinfo import ZoneInfo

from django.db import connection, transaction
from django.utils import timezone

from . import cache as catalog_cache
from . import seeding_writes
from .models import Event, Performer, Row, Section, Venue, new_event_id
from .services import local_event_date

BATCH_EVENTS = 2000

# name, city, state, country, time zone, kind
VENUES = [
    ("Madison Square Garden", "New York", "NY", "US", "America/New_York", "arena"),
    ("Barclays Center", "Brooklyn", "NY", "US", "America/New_York", "arena"),
    ("Radio City Music Hall", "New York", "NY", "US", "America/New_York", "theatre"),
    ("TD Garden", "Boston", "MA", "US", "America/New_York", "arena"),
    ("Fenway Park", "Boston", "MA", "US", "America/New_York", "stadium"),
    ("Wells Fargo Center", "Philadelphia", "PA", "US", "America/New_York", "arena"),
    ("Capital One Arena", "Washington", "DC", "US", "America/New_York", "arena"),
    ("State Farm Arena", "Atlanta", "GA", "US", "America/New_York", "arena"),
    ("Fox Theatre", "Atlanta", "GA", "US", "America/New_York", "theatre"),
    ("Hard Rock Stadium", "Miami Gardens", "FL", "US", "America/New_York", "stadium"),
    ("United Center", "Chicago", "IL", "US", "America/Chicago", "arena"),
    ("Wrigley Field", "Chicago", "IL", "US", "America/Chicago", "stadium"),
    ("Chicago Theatre", "Chicago", "IL", "US", "America/Chicago", "theatre"),
    ("Ryman Auditorium", "Nashville", "TN", "US", "America/Chicago", "theatre"),
    ("Bridgestone Arena", "Nashville", "TN", "US", "America/Chicago", "arena"),
    ("AT&T Stadium", "Arlington", "TX", "US", "America/Chicago", "stadium"),
    ("Moody Center", "Austin", "TX", "US", "America/Chicago", "arena"),
    ("Toyota Center", "Houston", "TX", "US", "America/Chicago", "arena"),
    ("Ball Arena", "Denver", "CO", "US", "America/Denver", "arena"),
    ("Red Rocks Amphitheatre", "Morrison", "CO", "US", "America/Denver", "amphitheatre"),
    ("Footprint Center", "Phoenix", "AZ", "US", "America/Phoenix", "arena"),
    ("T-Mobile Arena", "Las Vegas", "NV", "US", "America/Los_Angeles", "arena"),
    ("Sphere", "Las Vegas", "NV", "US", "America/Los_Angeles", "theatre"),
    ("Crypto.com Arena", "Los Angeles", "CA", "US", "America/Los_Angeles", "arena"),
    ("Hollywood Bowl", "Los Angeles", "CA", "US", "America/Los_Angeles", "amphitheatre"),
    ("Kia Forum", "Inglewood", "CA", "US", "America/Los_Angeles", "arena"),
    ("SoFi Stadium", "Inglewood", "CA", "US", "America/Los_Angeles", "stadium"),
    ("Chase Center", "San Francisco", "CA", "US", "America/Los_Angeles", "arena"),
    ("Climate Pledge Arena", "Seattle", "WA", "US", "America/Los_Angeles", "arena"),
    ("Moda Center", "Portland", "OR", "US", "America/Los_Angeles", "arena"),
    ("Scotiabank Arena", "Toronto", "ON", "CA", "America/Toronto", "arena"),
    ("Bell Centre", "Montreal", "QC", "CA", "America/Toronto", "arena"),
    ("Rogers Arena", "Vancouver", "BC", "CA", "America/Vancouver", "arena"),
    ("Royal Albert Hall", "London", "", "GB", "Europe/London", "theatre"),
    ("The O2", "London", "", "GB", "Europe/London", "arena"),
    ("AO Arena", "Manchester", "", "GB", "Europe/London", "arena"),
    ("3Arena", "Dublin", "", "IE", "Europe/Dublin", "arena"),
    ("Accor Arena", "Paris", "", "FR", "Europe/Paris", "arena"),
    ("Ziggo Dome", "Amsterdam", "", "NL", "Europe/Amsterdam", "arena"),
    ("Palau Sant Jordi", "Barcelona", "", "ES", "Europe/Madrid", "arena"),
    ("Uber Arena", "Berlin", "", "DE", "Europe/Berlin", "arena"),
    ("Sydney Opera House", "Sydney", "NSW", "AU", "Australia/Sydney", "theatre"),
    ("Rod Laver Arena", "Melbourne", "VIC", "AU", "Australia/Melbourne", "arena"),
    ("Auditorio Nacional", "Mexico City", "CDMX", "MX", "America/Mexico_City", "theatre"),
]

SITES = ["ticketmaster"] * 5 + ["axs"] * 2 + ["seatgeek"] * 2 + ["eventbrite", "etix", "dice"]

_ADJECTIVES = [
    "Midnight", "Golden", "Electric", "Velvet", "Silver", "Wild", "Neon", "Crimson", "Hollow", "Northern",
    "Lunar", "Broken", "Paper", "Glass", "Stone", "Rolling", "Quiet", "Burning", "Painted", "Restless",
]  # fmt: skip
_NOUNS = [
    "Harbor", "Foxes", "Echoes", "Riders", "Tides", "Lanterns", "Pilots", "Canyons", "Sparrows", "Engines",
    "Rivers", "Kings", "Saints", "Mirrors", "Horizons", "Wolves", "Comets", "Orchards", "Satellites", "Bells",
]  # fmt: skip
_FIRST = ["Ava", "Leo", "Maya", "Noah", "Zoe", "Eli", "Nina", "Omar", "Ruby", "Theo", "Iris", "Jonah", "Lena"]
_LAST = ["Hart", "Reyes", "Okafor", "Lindqvist", "Moreau", "Castillo", "Nakamura", "Brooks", "Vance", "Quinn"]
_TEAMS = [
    "New York Knights", "Boston Harbormen", "Chicago Blaze", "Dallas Stampede", "Denver Peaks",
    "Seattle Sound", "Phoenix Suns FC", "Atlanta Flight", "Miami Surge", "Los Angeles Comets",
    "Toronto North", "Vancouver Tide", "Nashville Strings", "Houston Orbit", "Portland Timber",
]  # fmt: skip
_TOURS = [
    "World Tour",
    "Live",
    "Farewell Tour",
    "Summer Nights",
    "Acoustic Evening",
    "Arena Tour",
    "In Concert",
]
_SHOWS = [
    "The Phantom Gala", "Moonlight Ballet", "Comedy Night Live", "Symphony Under the Stars", "Hamlet Reimagined",
    "The Nutcracker", "Magic of the Masters", "Jazz Legends Revue", "Broadway Hits", "Cirque Lumière",
]  # fmt: skip

_RESTRICTIONS = [
    ("Obstructed view", "A pillar or rigging blocks part of the stage."),
    ("Limited view", "Part of the stage or screen is not visible."),
    ("Side view", "Seats face the side of the stage."),
    ("Rear view", "Seats behind the stage."),
    ("Limited legroom", None),
    ("Age 21+", "Photo ID required at the door."),
]

# Section templates by venue kind: (name, display, general admission, price multiplier, rows)
_ROWS_AZ = [chr(c) for c in range(ord("A"), ord("Z") + 1)]


def _templates(kind: str, rng: random.Random) -> list[tuple[str, str, bool, float, list[str]]]:
    if kind == "theatre":
        names = [
            ("Orchestra Center", "Orchestra Center", 1.6),
            ("Orchestra Left", "Orchestra Left", 1.3),
            ("Orchestra Right", "Orchestra Right", 1.3),
            ("Mezzanine", "Mezzanine", 1.0),
            ("Balcony", "Balcony", 0.7),
            ("Box 4/5", "Box 4 & 5", 1.9),
        ]
        chosen = rng.sample(names, rng.randint(2, 4))
        return [(n, d, False, m, _ROWS_AZ[: rng.randint(2, 5)]) for n, d, m in chosen]
    sections: list[tuple[str, str, bool, float, list[str]]] = []
    if kind in ("arena", "amphitheatre") and rng.random() < 0.7:
        sections.append(("Floor GA", "Floor General Admission", True, 1.2, ["GA"]))
    if kind == "amphitheatre":
        sections.append(("Lawn", "Lawn General Admission", True, 0.6, ["GA"]))
    level = {"arena": (100, 200, 300), "stadium": (100, 200, 500), "amphitheatre": (1, 2, 3)}[kind]
    count = rng.randint(1, 3)
    for _ in range(count):
        tier = rng.choice(level)
        number = tier + rng.randint(1, 30) if tier >= 100 else tier
        label = {1: "Reserved", 2: "Terrace", 3: "Upper"}.get(number, "Section")
        name = f"{number}" if tier >= 100 else f"{label} {number}"
        mult = {100: 1.4, 200: 1.0, 300: 0.75, 500: 0.65, 1: 1.3, 2: 1.0, 3: 0.8}[tier]
        rows = [str(r) for r in range(1, rng.randint(2, 5))] if tier >= 100 else _ROWS_AZ[: rng.randint(1, 4)]
        sections.append((name, f"Section {name}" if tier >= 100 else name, False, mult, rows))
    # Names are unique per event.
    unique = {s[0]: s for s in sections}
    return list(unique.values())


def _money(value: float) -> str:
    """Two-decimal text for a price, made without float noise (``12.3456`` → ``"12.35"``)."""
    cents = max(1, round(value * 100))
    return f"{cents // 100}.{cents % 100:02d}"


@dataclass
class SeedReport:
    events: int = 0
    demo_events: int = 0
    sections: int = 0
    rows: int = 0
    seconds: float = 0.0


class _Builder:
    def __init__(self, rng: random.Random, venues: list[tuple[Venue, str]], performers: list[Performer]):
        self.rng = rng
        self.venues = venues
        self.performers = performers
        self.now = timezone.now()

    def event_spec(self) -> tuple[Venue, str, str, datetime, list[Performer], str, float]:
        rng = self.rng
        venue, kind = rng.choice(self.venues)
        day = (self.now + timedelta(days=rng.uniform(-30, 180))).astimezone(ZoneInfo(venue.timezone)).date()
        hour = rng.choice([(19, 0), (19, 30), (20, 0), (20, 0), (18, 30), (14, 0)])
        local = datetime.combine(day, dtime(*hour), tzinfo=ZoneInfo(venue.timezone))
        if kind == "stadium" and rng.random() < 0.5:
            home, away = rng.sample(_TEAMS, 2)
            name, performers = f"{home} vs {away}", []
        elif kind == "theatre" and rng.random() < 0.5:
            name, performers = rng.choice(_SHOWS), []
        else:
            performers = rng.sample(self.performers, 1 if rng.random() < 0.8 else 2)
            name = f"{performers[0].name}: {rng.choice(_TOURS)}"
            if len(performers) > 1:
                name = f"{performers[0].name} with {performers[1].name}"
        popularity = rng.lognormvariate(0, 0.5)
        return venue, kind, name, local.astimezone(UTC), performers, rng.choice(SITES), popularity

    def sections(self, kind: str, popularity: float) -> list[tuple[str, str, bool, list[tuple]]]:
        """``[(name, display, general_admission, [row tuple, …]), …]`` for one event."""
        rng = self.rng
        base = 40 + 60 * popularity
        result = []
        for name, display, ga, mult, row_names in _templates(kind, rng):
            rows = []
            for position, row_name in enumerate(row_names):
                offer = base * mult * (1.15 - 0.05 * position) * rng.uniform(0.9, 1.1)
                restricted = not ga and rng.random() < 0.12
                label, detail = rng.choice(_RESTRICTIONS) if restricted else (None, None)
                rows.append(
                    (
                        row_name,
                        "General Admission" if ga else f"Row {row_name}",
                        100 if ga else rng.choice([0, 2, 4, 6, 8, 10, 12, 20, 40]),
                        _money(offer * (0.8 if restricted else 1.0)),
                        _money(offer * rng.uniform(1.1, 1.5)),
                        [label] if label else [],
                        detail,
                    )
                )
            result.append((name, display, ga, rows))
        return result


def _venues() -> list[tuple[Venue, str]]:
    existing = {(v.name, v.city): v for v in Venue.objects.all()}
    missing = [
        Venue(name=n, city=c, state=s, country=co, timezone=tz)
        for n, c, s, co, tz, _ in VENUES
        if (n, c) not in existing
    ]
    for venue in Venue.objects.bulk_create(missing):
        existing[(venue.name, venue.city)] = venue
    return [(existing[(n, c)], kind) for n, c, _, _, _, kind in VENUES]


def _performers(rng: random.Random) -> list[Performer]:
    names = {f"The {a} {n}" for a in _ADJECTIVES for n in _NOUNS}
    names |= {f"{f} {last}" for f in _FIRST for last in _LAST}
    names = sorted(names)
    existing = {p.name: p for p in Performer.objects.filter(name__in=names)}
    Performer.objects.bulk_create([Performer(name=n) for n in names if n not in existing])
    by_name = {p.name: p for p in Performer.objects.filter(name__in=names)}
    return [by_name[n] for n in names]


def _insert(builder: _Builder, specs: list[tuple], report: SeedReport) -> None:
    """Insert events given as ``(venue, kind, name, starts_at, performers, site, popularity)``."""
    sections = [builder.sections(spec[1], spec[6]) for spec in specs]
    _write(specs, sections, report)


def _write(specs: list[tuple], sections: list[list[tuple]], report: SeedReport) -> list[str]:
    """Insert the events of ``specs`` with their ``sections``; returns the new event ids."""
    events = [
        (
            new_event_id(),
            name,
            venue.pk,
            starts_at,
            venue.timezone,
            local_event_date(starts_at=starts_at, tz_name=venue.timezone),
            site,
            [p.pk for p in performers],
        )
        for venue, _kind, name, starts_at, performers, site, _pop in specs
    ]
    with transaction.atomic():
        seeding_writes.write_postgres(events, sections)
    report.events += len(events)
    report.sections += sum(len(s) for s in sections)
    report.rows += sum(len(rows) for event_sections in sections for *_, rows in event_sections)
    return [event[0] for event in events]


def _demo_specs(builder: _Builder, venues: dict[str, Venue], performers: list[Performer]) -> list[tuple]:
    """Fixed demo events, placed relative to now so the catalog always has past, imminent and later ones."""
    now = builder.now

    def at(venue_name: str, days: float, hour: int, minute: int = 0) -> tuple[Venue, datetime]:
        venue = venues[venue_name]
        local_day = (now + timedelta(days=days)).astimezone(ZoneInfo(venue.timezone)).date()
        local = datetime.combine(local_day, dtime(hour, minute), tzinfo=ZoneInfo(venue.timezone))
        return venue, local.astimezone(UTC)

    by_name = {p.name: p for p in performers}
    harbor, foxes = by_name["The Golden Harbor"], by_name["The Neon Foxes"]
    ava, leo = by_name["Ava Hart"], by_name["Leo Reyes"]
    specs = []
    for venue_name, kind, name, days, hour, perf, site in [
        (
            "Madison Square Garden",
            "arena",
            "The Golden Harbor: World Tour",
            -20,
            20,
            [harbor],
            "ticketmaster",
        ),
        ("Ryman Auditorium", "theatre", "Ava Hart: Acoustic Evening", -3, 19, [ava], "axs"),
        ("Madison Square Garden", "arena", "The Golden Harbor: World Tour", 3, 20, [harbor], "ticketmaster"),
        ("Hollywood Bowl", "amphitheatre", "Symphony Under the Stars", 12, 19, [], "ticketmaster"),
        ("Fenway Park", "stadium", "Boston Harbormen vs New York Knights", 20, 19, [], "seatgeek"),
        ("The O2", "arena", "The Neon Foxes with Leo Reyes", 35, 20, [foxes, leo], "axs"),
        ("Red Rocks Amphitheatre", "amphitheatre", "The Neon Foxes: Summer Nights", 60, 19, [foxes], "axs"),
        ("Radio City Music Hall", "theatre", "The Nutcracker", 90, 14, [], "ticketmaster"),
        ("Sydney Opera House", "theatre", "Ava Hart: In Concert", 120, 20, [ava], "eventbrite"),
        ("Chase Center", "arena", "Leo Reyes: Farewell Tour", 175, 20, [leo], "seatgeek"),
    ]:
        venue, starts_at = at(venue_name, days, hour)
        specs.append((venue, kind, name, starts_at, perf, site, 1.5))
    # One event that starts within 36 hours whatever the time of day: now + 20 hours, on the hour.
    venue = venues["United Center"]
    soon = (now + timedelta(hours=20)).replace(minute=0, second=0, microsecond=0)
    specs.append((venue, "arena", "Leo Reyes: Arena Tour", soon, [leo], "ticketmaster", 1.8))
    return specs


# The walk-throughs (README "The partner flow", docs/partners/integrating.md "Integrating") search `q=skyline` and quotes two tickets in
# row B of section "Lower 101". No generated name holds the word, and the event's sections and rows are fixed.
WALKTHROUGH_SEARCH = "skyline"
WALKTHROUGH_EVENT_NAME = "The Skyline Sessions: Live"
WALKTHROUGH_PERFORMER = "The Skyline Sessions"
WALKTHROUGH_VENUE = ("Madison Square Garden", "New York")
# How far ahead the walk-through needs an event: its in-hand date is 7 days ahead and must be at least 2 days
# before the event's local date, so it lists events from 9 days ahead (``date_from``). A new one is placed
# WALKTHROUGH_PLACE_DAYS ahead whenever none starts WALKTHROUGH_MIN_DAYS or more ahead.
WALKTHROUGH_MIN_DAYS = 14
WALKTHROUGH_PLACE_DAYS = 60
# (name, display, general admission, rows as (name, display, quantity, offer, face value, restrictions, detail))
WALKTHROUGH_SECTIONS = [
    ("Floor GA", "Floor General Admission", True, [("GA", "General Admission", 400, "140.00", "165.00", [], None)]),
    (
        "Lower 101",
        "Section Lower 101",
        False,
        [
            ("A", "Row A", 200, "125.00", "165.00", [], None),
            ("B", "Row B", 200, "118.50", "165.00", [], None),
            ("C", "Row C", 200, "96.00", "145.00", ["Limited view"], "Part of the stage or screen is not visible."),
        ],
    ),
    ("Upper 301", "Section Upper 301", False, [("1", "Row 1", 200, "64.00", "89.50", [], None)]),
]  # fmt: skip


def walkthrough_event_ensure(
    *, now: datetime | None = None, report: SeedReport | None = None
) -> tuple[Event, bool]:
    """The walk-through's event, starting at least WALKTHROUGH_MIN_DAYS ahead: the nearest such one, or a new
    one WALKTHROUGH_PLACE_DAYS ahead (20:00 at the venue). Returns ``(event, created)``."""
    now = now or timezone.now()
    existing = (
        Event.objects.filter(
            name=WALKTHROUGH_EVENT_NAME,
            status=Event.Status.SCHEDULED,
            starts_at__gte=now + timedelta(days=WALKTHROUGH_MIN_DAYS),
        )
        .order_by("starts_at")
        .first()
    )
    if existing is not None:
        return existing, False
    venue = next(v for v, _kind in _venues() if (v.name, v.city) == WALKTHROUGH_VENUE)
    performer, _ = Performer.objects.get_or_create(name=WALKTHROUGH_PERFORMER)
    zone = ZoneInfo(venue.timezone)
    day = (now + timedelta(days=WALKTHROUGH_PLACE_DAYS)).astimezone(zone).date()
    starts_at = datetime.combine(day, dtime(20, 0), tzinfo=zone).astimezone(UTC)
    spec = (venue, "arena", WALKTHROUGH_EVENT_NAME, starts_at, [performer], "ticketmaster", 1.0)
    sections = [[(name, display, ga, list(rows)) for name, display, ga, rows in WALKTHROUGH_SECTIONS]]
    (event_id,) = _write([spec], sections, report or SeedReport())
    catalog_cache.bump_version()
    return Event.objects.get(event_id=event_id), True


def catalog_seed(*, events: int, seed: int | None = None) -> SeedReport:
    """Add ``events`` generated events (and, on an empty catalog, the demo events first)."""
    started = time.monotonic()
    rng = random.Random(seed)
    report = SeedReport()
    fresh = not Event.objects.exists()
    venues = _venues()
    performers = _performers(rng)
    builder = _Builder(rng, venues, performers)
    if fresh:
        demo = _demo_specs(builder, {v.name: v for v, _ in venues}, performers)
        _insert(builder, demo, report)
        report.demo_events = len(demo)
        walkthrough_event_ensure(now=builder.now, report=report)
        report.demo_events += 1
    remaining = events
    while remaining > 0:
        batch = min(BATCH_EVENTS, remaining)
        _insert(builder, [builder.event_spec() for _ in range(batch)], report)
        remaining -= batch
    # Fresh planner statistics, so the first list queries after a large seed use the indexes.
    with connection.cursor() as cursor:
        tables = [m._meta.db_table for m in (Event, Event.performers.through, Section, Row, Venue, Performer)]
        cursor.execute(f"ANALYZE {', '.join(tables)}")
    catalog_cache.bump_version()
    report.seconds = time.monotonic() - started
    return report
