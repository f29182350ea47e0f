"""Writes on venues, performers, events (with their local date), cancellation, and rows' descriptions.

``Event.event_date`` is derived here from ``starts_at`` in the event's time zone; nothing else writes
events, so the stored date that the list filters on always matches the start instant. ``Event.status``
changes only in ``event_transition`` (staff's cancel action, an edit in the admin, a catalog import), which
records the move in ``EventStatusHistory`` and tells the apps above about a cancellation once it commits.
"""

import logging
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils import timezone

from config.core.statemachine import IllegalStateMove, StateMachine

from .. import cache as catalog_cache
from ..models import Event, EventStatusHistory, Performer, Row, Section, Venue
from ..signals import event_canceled_after_commit

logger = logging.getLogger(__name__)

E = Event.Status
# Every legal move of an event's status. A canceled event may be scheduled again (staff or the supplier's
# file reinstate it); the orders its cancellation canceled stay canceled.
EVENT_TRANSITIONS: dict[str, frozenset[str]] = {
    E.SCHEDULED: frozenset({E.CANCELED}),
    E.CANCELED: frozenset({E.SCHEDULED}),
}
EVENT_MACHINE = StateMachine(
    name="event",
    field="status",
    moves=EVENT_TRANSITIONS,
    history=EventStatusHistory,
    history_fk="event",
    refuse=lambda event, from_status, to_status: IllegalStateMove(
        machine="event", label=event.event_id, from_state=from_status, to_state=to_status
    ),
)
# The fields an edit saves; the status and its cancellation time belong to ``event_transition``.
_STATUS_FIELDS = frozenset({"id", "status", "canceled_at"})


def local_event_date(*, starts_at: datetime, tz_name: str) -> date:
    """The calendar date of ``starts_at`` on the wall clock of ``tz_name``."""
    return starts_at.astimezone(ZoneInfo(tz_name)).date()


def _announce_change() -> None:
    # Cached catalog pages are dropped once the write is visible to other connections.
    transaction.on_commit(catalog_cache.bump_version)


def catalog_model_changed(sender, **kwargs) -> None:
    """Receiver of every save and delete of a venue, performer, event, section or row, and of an event's
    performers (connected in ``CatalogConfig.ready``): whatever wrote it (a service, an admin page, a shell),
    the catalog's version moves once the write commits. Quantities move through ``quantities`` instead."""
    _announce_change()


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
    actor: str = "system:catalog",
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
    )
    event.full_clean(exclude=["performers"])
    event_insert(event=event, actor=actor)
    performers = list(performers)
    if performers:
        event.performers.set(performers)
    _announce_change()
    return event


def event_insert(*, event: Event, actor: str, reason: str = "Event created") -> Event:
    """Insert a new event with its initial status (and its cancellation time if it starts canceled), and
    record the status it was created with."""
    now = timezone.now()
    event.canceled_at = now if event.status == E.CANCELED else None
    event.save(force_insert=True)
    EVENT_MACHINE.record(obj=event, from_state="", to_state=event.status, actor=actor, reason=reason, at=now)
    return event


@transaction.atomic
def event_save(*, event: Event, actor: str = "staff", reason: str = "") -> Event:
    """Save an edited event (admin, import): recompute its local date and normalise the site. A changed
    status goes through ``event_transition``; a new event is created with its status."""
    event.primary_site = event.primary_site.strip().lower()
    event.event_date = local_event_date(starts_at=event.starts_at, tz_name=event.timezone)
    if event.pk is None:
        event_insert(event=event, actor=actor)
    else:
        wanted = event.status
        event.save(
            update_fields=[f.name for f in Event._meta.concrete_fields if f.name not in _STATUS_FIELDS]
        )
        stored = Event.objects.filter(pk=event.pk).values_list("status", flat=True).get()
        if wanted != stored:
            event_transition(event=event, to=wanted, actor=actor, reason=reason or "Status edited")
    _announce_change()
    return event


@transaction.atomic
def event_transition(*, event: Event, to: str, actor: str, reason: str = "") -> Event:
    """Move ``event`` to ``to`` if ``EVENT_TRANSITIONS`` allows it; write the history row; return the fresh
    event. Raises ``IllegalStateMove`` for anything else (including a move to the status it already has).

    A cancellation stamps ``canceled_at`` (cleared again by a reinstatement) and, once it commits, runs the
    catalog's event-canceled subscribers: orders cancels the event's open orders.
    """
    now = timezone.now()
    locked, _ = EVENT_MACHINE.move(
        obj=event,
        to=to,
        actor=actor,
        reason=reason,
        changes={"canceled_at": now if to == E.CANCELED else None},
        at=now,
    )
    _announce_change()
    if to == E.CANCELED:
        event_canceled_after_commit(event_pk=locked.pk)
    return locked


def event_cancel(*, event: Event, actor: str = "staff", reason: str = "Canceled by staff") -> bool:
    """Cancel an event: no new quote or order is accepted for it. Returns False if it already was."""
    try:
        event_transition(event=event, to=E.CANCELED, actor=actor, reason=reason)
    except IllegalStateMove:
        event.refresh_from_db(fields=["status", "canceled_at", "updated_at"])
        return False
    return True


# What the admin may write on an existing row: everything but its quantity.
ROW_DESCRIPTION_FIELDS = (
    "section",
    "name",
    "name_display",
    "offer_price",
    "face_value",
    "restrictions",
    "restriction_detail",
)


@transaction.atomic
def row_save(*, row: Row) -> Row:
    """Save a row edited in the admin: a new row is created with its initial quantity; an existing row's
    quantity is never written here, since the figure on the form was read before orders may have taken
    tickets (a correction is ``row_quantity_adjust``)."""
    if row.pk is None:
        row.save()
    else:
        row.save(update_fields=ROW_DESCRIPTION_FIELDS)
    _announce_change()
    return row


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
    """Create the row with ``available_quantity``, or update an existing row's description and prices.

    An existing row keeps its quantity: orders may have taken tickets from it since it was set, and only
    relative changes (``catalog.services.quantities``) may touch it. New prices apply to quotes made from
    now on; existing quotes keep their snapshot.
    """
    values = {
        "name_display": name_display,
        "offer_price": offer_price,
        "face_value": face_value,
        "restrictions": list(restrictions),
        "restriction_detail": restriction_detail or None,
    }
    row, created = Row.objects.get_or_create(
        section=section, name=name, defaults={**values, "available_quantity": available_quantity}
    )
    if not created:
        for field, value in values.items():
            setattr(row, field, value)
        row.save(update_fields=list(values))
    _announce_change()
    return row
