"""Catalog reads. Each list costs a fixed number of queries whatever the page size."""

from collections import defaultdict
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from config.api.pagination import Page, decode_cursor, page_of, paginate

from . import errors, queries
from .models import Event, Performer, Section, Venue

EVENT_ORDERING = ("starts_at", "id")
SECTION_ORDERING = ("name", "id")
ROW_ORDERING = ("name", "id")

_EVENT_FIELDS = (
    "id",
    "event_id",
    "name",
    "starts_at",
    "timezone",
    "event_date",
    "primary_site",
    "status",
    "venue__venue_id",
    "venue__name",
    "venue__city",
    "venue__state",
    "venue__country",
)


def _events() -> QuerySet[Event]:
    return Event.objects.select_related("venue").only(*_EVENT_FIELDS)


def _events_with_performers(performer_pks: list[int]) -> QuerySet:
    """Ids of events linked to any of the performers, as a subquery."""
    through = Event.performers.through
    return through.objects.filter(performer_id__in=performer_pks).values("event_id")


def event_filter(*, filters: dict[str, Any]) -> QuerySet[Event]:
    """Events matching the list filters (docs/partners/catalog-and-quotes.md "Catalog"; all combine with AND).

    Venue and performer conditions are first resolved to ids on their small tables (at most one query
    each), so the event query gets literal id lists the planner can estimate and index; an AND filter
    that matches no venue or performer answers without touching the events.
    """
    qs = _events()
    if "date_from" in filters:
        qs = qs.filter(event_date__gte=filters["date_from"])
    else:
        qs = qs.filter(starts_at__gt=timezone.now())  # default: not started yet
    if "date_to" in filters:
        qs = qs.filter(event_date__lte=filters["date_to"])
    if "primary_site" in filters:
        # Sites are stored lower case, so an exact match on the lowered value uses the index.
        qs = qs.filter(primary_site=filters["primary_site"].strip().lower())

    venue_lookups = {
        "venue_id": filters.get("venue_id"),
        "name__icontains": filters.get("venue_name"),
        "city__iexact": filters.get("city"),
    }
    venue_lookups = {k: v for k, v in venue_lookups.items() if v is not None}
    if venue_lookups:
        venue_pks = list(Venue.objects.filter(**venue_lookups).values_list("pk", flat=True))
        if not venue_pks:
            return qs.none()
        qs = qs.filter(venue_id__in=venue_pks)

    performer_lookups = {
        "performer_id": filters.get("performer_id"),
        "name__icontains": filters.get("performer_name"),
    }
    performer_lookups = {k: v for k, v in performer_lookups.items() if v is not None}
    if performer_lookups:
        performer_pks = list(Performer.objects.filter(**performer_lookups).values_list("pk", flat=True))
        if not performer_pks:
            return qs.none()
        qs = qs.filter(pk__in=_events_with_performers(performer_pks))

    if q := filters.get("q"):
        matches = Q(name__icontains=q)
        venue_pks = list(
            Venue.objects.filter(Q(name__icontains=q) | Q(city__icontains=q)).values_list("pk", flat=True)
        )
        if venue_pks:
            matches |= Q(venue_id__in=venue_pks)
        performer_pks = list(Performer.objects.filter(name__icontains=q).values_list("pk", flat=True))
        if performer_pks:
            matches |= Q(pk__in=_events_with_performers(performer_pks))
        qs = qs.filter(matches)
    return qs


def performers_by_event(*, event_pks: list[int]) -> dict[int, list[tuple[str, str]]]:
    """``{event pk: [(performer_id, name), …]}`` in the order they were linked; one query."""
    result: dict[int, list[tuple[str, str]]] = defaultdict(list)
    if not event_pks:
        return result
    links = (
        Event.performers.through.objects.filter(event_id__in=event_pks)
        .order_by("id")
        .values_list("event_id", "performer__performer_id", "performer__name")
    )
    for event_pk, performer_id, name in links:
        result[event_pk].append((performer_id, name))
    return result


def event_list(*, filters: dict[str, Any], limit: int, cursor: str | None) -> tuple[Page, dict]:
    """A page of events (2 queries) and their performers keyed by event pk."""
    page = paginate(event_filter(filters=filters), ordering=EVENT_ORDERING, limit=limit, cursor=cursor)
    return page, performers_by_event(event_pks=[e.pk for e in page.results])


def event_get(*, event_id: str) -> tuple[Event, list[tuple[str, str]]]:
    """One event and its performers (2 queries); EVENT_NOT_FOUND if the id is unknown."""
    event = _events().filter(event_id=event_id).first()
    if event is None:
        raise errors.EventNotFound(details={"event_id": event_id})
    return event, performers_by_event(event_pks=[event.pk])[event.pk]


def event_pk_for(*, event_id: str) -> int:
    pk = Event.objects.filter(event_id=event_id).values_list("pk", flat=True).first()
    if pk is None:
        raise errors.EventNotFound(details={"event_id": event_id})
    return pk


def section_list(*, event_id: str, limit: int, cursor: str | None) -> Page:
    """The event's sections with their total quantity and lowest offer: one statement
    (``queries.section_page``); an empty page is checked for its event (EVENT_NOT_FOUND) by one more."""
    after = decode_cursor(cursor, SECTION_ORDERING) if cursor else None
    sections = queries.section_page(event_id=event_id, after=after, size=limit + 1)
    if not sections:
        event_pk_for(event_id=event_id)
    return page_of(sections, ordering=SECTION_ORDERING, limit=limit)


def section_pk_for(*, event_id: str, section_name: str) -> int:
    """The section's pk: one query when it exists; EVENT_NOT_FOUND or SECTION_NOT_FOUND otherwise."""
    pk = (
        Section.objects.filter(event__event_id=event_id, name=section_name)
        .values_list("pk", flat=True)
        .first()
    )
    if pk is None:
        event_pk_for(event_id=event_id)
        raise errors.SectionNotFound(details={"event_id": event_id, "section_name": section_name})
    return pk


def row_list(*, event_id: str, section_name: str, limit: int, cursor: str | None) -> Page:
    """The section's rows: one statement (``queries.row_page``); an empty page is checked for its event and
    section (EVENT_NOT_FOUND, SECTION_NOT_FOUND) by one more."""
    after = decode_cursor(cursor, ROW_ORDERING) if cursor else None
    rows = queries.row_page(event_id=event_id, section_name=section_name, after=after, size=limit + 1)
    if not rows:
        section_pk_for(event_id=event_id, section_name=section_name)
    return page_of(rows, ordering=ROW_ORDERING, limit=limit)
