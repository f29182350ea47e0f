"""Every write on the catalog: events (with their local date), cancellation, and catalog imports.

``Event.event_date`` is derived here from ``starts_at`` in the event's time zone; nothing else writes
events, so the stored date that the list filters on always matches the start instant.
"""

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from . import cache as catalog_cache
from .importing import ImportLineSerializer, Item, line_errors
from .models import Event, Performer, Row, Section, Venue

logger = logging.getLogger(__name__)


def local_event_date(*, starts_at: datetime, tz_name: str) -> date:
    """The calendar date of ``starts_at`` on the wall clock of ``tz_name``."""
    return starts_at.astimezone(ZoneInfo(tz_name)).date()


def _announce_change() -> None:
    # Cached catalog pages are dropped once the write is visible to other connections.
    transaction.on_commit(catalog_cache.bump_version)


def catalog_changed() -> None:
    """Tell the read API that sections or rows were edited directly (the admin's inlines)."""
    _announce_change()


@transaction.atomic
def venue_get_or_create(
    *, name: str, city: str, state: str = "", country: str = "US", tz_name: str
) -> tuple[Venue, bool]:
    """Venues are matched on name and city (case-insensitive)."""
    venue = Venue.objects.filter(name__iexact=name, city__iexact=city).first()
    if venue is not None:
        changed = False
        for field, value in (("state", state), ("country", country.upper()), ("timezone", tz_name)):
            if value and getattr(venue, field) != value:
                setattr(venue, field, value)
                changed = True
        if changed:
            venue.full_clean()
            venue.save()
        return venue, False
    venue = Venue(name=name, city=city, state=state, country=country.upper(), timezone=tz_name)
    venue.full_clean()
    venue.save()
    return venue, True


def performers_get_or_create(*, names: Iterable[str]) -> list[Performer]:
    """Performers are matched on their exact name; order follows ``names``."""
    wanted = [n.strip() for n in names if n and n.strip()]
    existing = {p.name: p for p in Performer.objects.filter(name__in=wanted)}
    result = []
    for name in dict.fromkeys(wanted):
        performer = existing.get(name) or Performer.objects.create(name=name)
        result.append(performer)
    return result


@transaction.atomic
def event_create(
    *,
    name: str,
    venue: Venue,
    starts_at: datetime,
    primary_site: str,
    performers: Iterable[Performer] = (),
    tz_name: str | None = None,
    external_id: str | None = None,
    status: str = Event.Status.SCHEDULED,
) -> Event:
    tz_name = tz_name or venue.timezone
    event = Event(
        name=name,
        venue=venue,
        starts_at=starts_at,
        timezone=tz_name,
        event_date=local_event_date(starts_at=starts_at, tz_name=tz_name),
        primary_site=primary_site.strip().lower(),
        external_id=external_id or None,
        status=status,
        canceled_at=timezone.now() if status == Event.Status.CANCELED else None,
    )
    event.full_clean(exclude=["performers"])
    event.save()
    performers = list(performers)
    if performers:
        event.performers.set(performers)
    _announce_change()
    return event


@transaction.atomic
def event_save(*, event: Event) -> Event:
    """Save an edited event (admin, import): recompute its local date and normalise the site."""
    event.primary_site = event.primary_site.strip().lower()
    event.event_date = local_event_date(starts_at=event.starts_at, tz_name=event.timezone)
    if event.status == Event.Status.CANCELED and event.canceled_at is None:
        event.canceled_at = timezone.now()
        if event.pk is not None:
            _cancel_open_orders_after_commit(event_pk=event.pk)
    elif event.status != Event.Status.CANCELED:
        event.canceled_at = None
    event.save()
    _announce_change()
    return event


@transaction.atomic
def event_cancel(*, event: Event) -> bool:
    """Cancel an event: no new quote or order is accepted for it. Returns False if it already was."""
    # Conditional update: two staff canceling at once record one cancellation time.
    updated = (
        Event.objects.filter(pk=event.pk)
        .exclude(status=Event.Status.CANCELED)
        .update(status=Event.Status.CANCELED, canceled_at=timezone.now(), updated_at=timezone.now())
    )
    event.refresh_from_db(fields=["status", "canceled_at", "updated_at"])
    if updated:
        _announce_change()
        _cancel_open_orders_after_commit(event_pk=event.pk)
    return bool(updated)


def _cancel_open_orders_after_commit(*, event_pk: int) -> None:
    """The event's open orders are canceled by a task; the periodic expiry run catches a lost message."""

    def publish() -> None:
        from orders.tasks import cancel_orders_of_canceled_events

        try:
            cancel_orders_of_canceled_events.delay(event_pk)
        except Exception:
            logger.warning(
                "Could not publish the cancellation of event pk=%s's orders", event_pk, exc_info=True
            )

    transaction.on_commit(publish)


@transaction.atomic
def row_upsert(
    *,
    section: Section,
    name: str,
    name_display: str,
    available_quantity: int,
    offer_price: Decimal,
    face_value: Decimal,
    restrictions: list[str],
    restriction_detail: str | None,
) -> Row:
    """New prices and quantities apply to quotes made from now on; existing quotes keep their snapshot."""
    values = {
        "name_display": name_display,
        "available_quantity": available_quantity,
        "offer_price": offer_price,
        "face_value": face_value,
        "restrictions": list(restrictions),
        "restriction_detail": restriction_detail or None,
    }
    row, created = Row.objects.get_or_create(section=section, name=name, defaults=values)
    if not created:
        for field, value in values.items():
            setattr(row, field, value)
        row.save(update_fields=list(values))
    _announce_change()
    return row


# --- catalog import ------------------------------------------------------------------------------------------
@dataclass
class ImportReport:
    events_created: int = 0
    events_updated: int = 0
    events_unchanged: int = 0
    rows_created: int = 0
    rows_updated: int = 0
    rows_unchanged: int = 0
    lines_applied: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["refused"] = [{"line": line, "error": error} for line, error in self.refused]
        return data


class _LineRefused(Exception):
    pass


@dataclass
class _LineResult:
    """What one line did; merged into the run's state only once the line's savepoint is released."""

    external_id: str
    event: Event
    event_fields: tuple
    event_created: bool
    event_changed: bool
    venue_key: tuple[str, str]
    venue: Venue
    row_key: tuple[str, str, str]
    row_outcome: str  # created | updated | unchanged
    section_changed: bool


class _Importer:
    """Applies validated import lines; remembers what this run saw so each line costs few queries."""

    def __init__(self, report: ImportReport):
        self.report = report
        self.venues: dict[tuple[str, str], Venue] = {}
        self.events: dict[str, tuple[Event, int, tuple]] = {}  # external_id → (event, first line, fields)
        self.rows_seen: dict[tuple[str, str, str], int] = {}
        self.created_events: set[str] = set()
        self.touched_events: set[str] = set()

    def apply(self, line: int, data: dict[str, Any]) -> _LineResult:
        external_id = data["external_id"]
        fields = (
            data["event_name"],
            data["starts_at"],
            data["timezone"],
            data["venue_name"].lower(),
            data["city"].lower(),
            data["primary_site"],
            tuple(data["performers"]),
            data["status"],
        )
        row_key = (external_id, data["section_name"], data["row_name"])
        if row_key in self.rows_seen:
            raise _LineRefused(f"row already given on line {self.rows_seen[row_key]}")
        venue_key = (data["venue_name"].lower(), data["city"].lower())
        venue = self.venues.get(venue_key)
        if external_id in self.events:
            event, first_line, first_fields = self.events[external_id]
            if fields != first_fields:
                raise _LineRefused(
                    f"event fields differ from line {first_line} for external_id {external_id!r}"
                )
            created = changed = False
        else:
            if venue is None:
                venue, _ = venue_get_or_create(
                    name=data["venue_name"],
                    city=data["city"],
                    state=data["state"],
                    country=data["country"],
                    tz_name=data["timezone"],
                )
            event, created, changed = self._event(data, venue)
        section_changed, row_outcome = self._row(event, data)
        return _LineResult(
            external_id=external_id,
            event=event,
            event_fields=fields,
            event_created=created,
            event_changed=changed,
            venue_key=venue_key,
            venue=venue or event.venue,
            row_key=row_key,
            row_outcome=row_outcome,
            section_changed=section_changed,
        )

    def _event(self, data: dict[str, Any], venue: Venue) -> tuple[Event, bool, bool]:
        event = Event.objects.filter(external_id=data["external_id"]).first()
        created = event is None
        if created:
            event = Event(external_id=data["external_id"])
        status = data["status"] or (Event.Status.SCHEDULED if created else event.status)
        watched = ("name", "venue_id", "starts_at", "timezone", "primary_site", "status")
        before = None if created else tuple(getattr(event, f) for f in watched)
        event.name, event.venue, event.starts_at = data["event_name"], venue, data["starts_at"]
        event.timezone, event.primary_site, event.status = data["timezone"], data["primary_site"], status
        changed = before != tuple(getattr(event, f) for f in watched)
        if changed:
            event.full_clean(exclude=["performers", "event_date", "event_id"])
            _event_write(event)
        performers = performers_get_or_create(names=data["performers"])
        current = [] if created else list(event.performers.order_by("id").values_list("pk", flat=True))
        if [p.pk for p in performers] != current:
            event.performers.set(performers)
            changed = True
        return event, created, changed and not created

    def _row(self, event: Event, data: dict[str, Any]) -> tuple[bool, str]:
        section, section_created = Section.objects.get_or_create(
            event=event,
            name=data["section_name"],
            defaults={
                "name_display": data["section_name_display"],
                "general_admission": data["general_admission"],
            },
        )
        section_changed = section_created
        if not section_created and (
            section.name_display != data["section_name_display"]
            or section.general_admission != data["general_admission"]
        ):
            section.name_display = data["section_name_display"]
            section.general_admission = data["general_admission"]
            section.save(update_fields=["name_display", "general_admission"])
            section_changed = True
        values = {
            "name_display": data["row_name_display"],
            "available_quantity": data["quantity"],
            "offer_price": data["offer_price"],
            "face_value": data["face_value"],
            "restrictions": data["restrictions"],
            "restriction_detail": data["restriction_detail"],
        }
        row = Row.objects.filter(section=section, name=data["row_name"]).first()
        if row is None:
            Row.objects.create(section=section, name=data["row_name"], **values)
            return section_changed, "created"
        if any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            row.save(update_fields=list(values))
            return section_changed, "updated"
        return section_changed, "unchanged"

    def remember(self, line: int, result: _LineResult) -> None:
        self.venues.setdefault(result.venue_key, result.venue)
        self.events.setdefault(result.external_id, (result.event, line, result.event_fields))
        self.rows_seen[result.row_key] = line
        if result.event_created:
            self.created_events.add(result.external_id)
        elif result.external_id not in self.created_events and (
            result.event_changed or result.section_changed or result.row_outcome != "unchanged"
        ):
            self.touched_events.add(result.external_id)
        setattr(
            self.report, f"rows_{result.row_outcome}", getattr(self.report, f"rows_{result.row_outcome}") + 1
        )


def _event_write(event: Event) -> None:
    event.event_date = local_event_date(starts_at=event.starts_at, tz_name=event.timezone)
    if event.status == Event.Status.CANCELED and event.canceled_at is None:
        event.canceled_at = timezone.now()
    elif event.status != Event.Status.CANCELED:
        event.canceled_at = None
    event.save()


def catalog_import(*, items: Iterable[Item], dry_run: bool = False) -> ImportReport:
    """Upsert events (by ``external_id``), their sections and rows from import items.

    Each line is applied in its own savepoint: a bad line is refused with a message and the good ones
    stay. Rows absent from the file are left as they are. With ``dry_run`` nothing is kept.
    """
    report = ImportReport()
    importer = _Importer(report)
    with transaction.atomic():
        for item in items:
            if item.data is None:
                report.refused.append((item.line, "item is not a JSON object"))
                continue
            line = ImportLineSerializer(data=item.data)
            if not line.is_valid():
                report.refused.append((item.line, line_errors(line)))
                continue
            try:
                with transaction.atomic():
                    result = importer.apply(item.line, line.validated_data)
            except _LineRefused as exc:
                report.refused.append((item.line, str(exc)))
                continue
            except (ValidationError, IntegrityError) as exc:
                message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc).strip()
                report.refused.append((item.line, message))
                continue
            importer.remember(item.line, result)
            report.lines_applied += 1
        report.events_created = len(importer.created_events)
        report.events_updated = len(importer.touched_events)
        report.events_unchanged = len(
            set(importer.events) - importer.created_events - importer.touched_events
        )
        if dry_run:
            transaction.set_rollback(True)
        elif report.lines_applied:
            _announce_change()
    return report
