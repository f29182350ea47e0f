"""Catalog imports (``manage.py import_catalog``): upsert events, sections and rows from validated lines.

A line for a row that already exists updates its description and prices but never its quantity: orders
may have taken tickets from the row since its quantity was last set, and writing the file's figure over it
would put sold tickets back on sale (docs/partners/catalog-and-quotes.md "Catalog › Availability and freshness"). A new row starts with
the file's quantity; an existing row's quantity changes through orders and staff adjustments only. Lines
whose quantity differs from the row's current one are counted in ``rows_quantity_kept``.
"""

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from config.core.statemachine import IllegalStateMove

from ..importing import ImportLineSerializer, Item, line_errors
from ..models import Event, Row, Section, Venue
from .events import (
    catalog_changed,
    event_insert,
    event_transition,
    local_event_date,
    performers_get_or_create,
    venue_get_or_create,
)

IMPORT_ACTOR = "system:import"
IMPORT_REASON = "Catalog import"
# What an import line may write on an existing event; its status goes through ``event_transition``.
_EVENT_FIELDS = ("name", "venue", "starts_at", "timezone", "primary_site", "event_date", "updated_at")


@dataclass
class ImportReport:
    events_created: int = 0
    events_updated: int = 0
    events_unchanged: int = 0
    rows_created: int = 0
    rows_updated: int = 0
    rows_unchanged: int = 0
    rows_quantity_kept: int = 0  # lines for existing rows whose quantity was not applied (see above)
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
    quantity_kept: bool = False


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
        section_changed, row_outcome, quantity_kept = self._row(event, data)
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
            quantity_kept=quantity_kept,
        )

    def _event(self, data: dict[str, Any], venue: Venue) -> tuple[Event, bool, bool]:
        event = Event.objects.filter(external_id=data["external_id"]).first()
        created = event is None
        if created:
            # A new event is inserted with the file's status; an existing one moves through its machine.
            event = Event(external_id=data["external_id"], status=data["status"] or Event.Status.SCHEDULED)
        stored_status = None if created else event.status
        status = data["status"] or event.status
        watched = ("name", "venue_id", "starts_at", "timezone", "primary_site")
        before = None if created else tuple(getattr(event, f) for f in watched)
        event.name, event.venue, event.starts_at = data["event_name"], venue, data["starts_at"]
        event.timezone, event.primary_site = data["timezone"], data["primary_site"]
        fields_changed = before != tuple(getattr(event, f) for f in watched)
        changed = fields_changed or stored_status != status
        if changed:
            event.full_clean(exclude=["performers", "event_date", "event_id"])
            _event_write(
                event,
                created=created,
                fields_changed=fields_changed,
                stored_status=stored_status,
                status=status,
            )
        performers = performers_get_or_create(names=data["performers"])
        current = [] if created else list(event.performers.order_by("id").values_list("pk", flat=True))
        if [p.pk for p in performers] != current:
            event.performers.set(performers)
            changed = True
        return event, created, changed and not created

    def _row(self, event: Event, data: dict[str, Any]) -> tuple[bool, str, bool]:
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
            "offer_price": data["offer_price"],
            "face_value": data["face_value"],
            "restrictions": data["restrictions"],
            "restriction_detail": data["restriction_detail"],
        }
        row = Row.objects.filter(section=section, name=data["row_name"]).first()
        if row is None:
            Row.objects.create(
                section=section, name=data["row_name"], available_quantity=data["quantity"], **values
            )
            return section_changed, "created", False
        quantity_kept = row.available_quantity != data["quantity"]
        if any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            # Only the listed fields: the quantity is never written back from what was read.
            row.save(update_fields=list(values))
            return section_changed, "updated", quantity_kept
        return section_changed, "unchanged", quantity_kept

    def remember(self, line: int, result: _LineResult) -> None:
        self.venues.setdefault(result.venue_key, result.venue)
        self.events.setdefault(result.external_id, (result.event, line, result.event_fields))
        self.rows_seen[result.row_key] = line
        self.report.rows_quantity_kept += result.quantity_kept
        if result.event_created:
            self.created_events.add(result.external_id)
        elif result.external_id not in self.created_events and (
            result.event_changed or result.section_changed or result.row_outcome != "unchanged"
        ):
            self.touched_events.add(result.external_id)
        setattr(
            self.report, f"rows_{result.row_outcome}", getattr(self.report, f"rows_{result.row_outcome}") + 1
        )


def _event_write(
    event: Event, *, created: bool, fields_changed: bool, stored_status: str | None, status: str
) -> None:
    event.event_date = local_event_date(starts_at=event.starts_at, tz_name=event.timezone)
    if created:
        event_insert(event=event, actor=IMPORT_ACTOR, reason=IMPORT_REASON)
        return
    if fields_changed:
        event.save(update_fields=_EVENT_FIELDS)
    if status != stored_status:
        # A cancellation cancels the event's open orders once the import commits, as staff's cancel does.
        try:
            event_transition(event=event, to=status, actor=IMPORT_ACTOR, reason=IMPORT_REASON)
        except IllegalStateMove as exc:
            if exc.from_state != exc.to_state:
                raise
            # Staff made the same move since the line was read: the event is as the file says.


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
            catalog_changed()
    return report
