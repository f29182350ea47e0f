"""Writes on venues, performers, events (with their local date), cancellation, and rows' descriptions.

``Event.event_date`` is derived here from ``starts_at`` in the event's time zone; nothing else writes
events, so the stored date that the list filters on always matches the start instant.
"""

import logging
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils import timezone

from .. import cache as catalog_cache
from ..events import event_canceled_after_commit
from ..models import Event, Performer, Row, Section, Venue

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
            event_canceled_after_commit(event_pk=event.pk)
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
        event_canceled_after_commit(event_pk=event.pk)
    return bool(updated)


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
