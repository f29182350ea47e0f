"""The catalog partners browse: venues, performers, events, and each event's sections and rows.

A row's ``available_quantity`` is the service's buy-back capacity for that row (how many tickets it still
buys there); its ``offer_price`` is what the service pays per ticket. Orders decrement the quantity.
"""

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Upper
from django.utils import timezone

from config.core.ids import new_public_id
from config.core.statemachine import StatusHistory


def new_venue_id() -> str:
    return new_public_id("ven")


def new_performer_id() -> str:
    return new_public_id("prf")


def new_event_id() -> str:
    return new_public_id("evt")


def validate_timezone_name(value: str) -> None:
    if value not in available_timezones():
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValidationError(f"{value!r} is not an IANA time zone name.") from exc


def validate_restrictions(value) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ValidationError("Restrictions must be a list of non-empty strings.")


class Venue(models.Model):
    venue_id = models.CharField("venue id", max_length=32, unique=True, default=new_venue_id, editable=False)
    name = models.CharField(max_length=200)
    city = models.CharField(max_length=120)
    state = models.CharField(max_length=64, blank=True, help_text="State, province or region.")
    country = models.CharField(max_length=2, help_text="ISO 3166-1 alpha-2 code, e.g. US.")
    timezone = models.CharField(
        max_length=64, validators=[validate_timezone_name], help_text="IANA name, e.g. America/New_York."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(Upper("city"), name="venue_city_ci")]

    def __str__(self) -> str:
        return f"{self.name}, {self.city}"


class Performer(models.Model):
    performer_id = models.CharField(
        "performer id", max_length=32, unique=True, default=new_performer_id, editable=False
    )
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Event(models.Model):
    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        CANCELED = "canceled", "Canceled"

    event_id = models.CharField("event id", max_length=32, unique=True, default=new_event_id, editable=False)
    external_id = models.CharField(
        max_length=100,
        unique=True,
        null=True,
        blank=True,
        help_text="The supplier's id of the event; catalog imports update the event that carries it.",
    )
    name = models.CharField(max_length=255)
    venue = models.ForeignKey(Venue, on_delete=models.PROTECT, related_name="events")
    performers = models.ManyToManyField(Performer, related_name="events", blank=True)
    starts_at = models.DateTimeField(help_text="Start instant (stored in UTC).")
    timezone = models.CharField(
        max_length=64,
        validators=[validate_timezone_name],
        help_text="IANA name; the venue's unless the event says otherwise.",
    )
    event_date = models.DateField(
        help_text="The local date of starts_at in the event's time zone (kept in step by the catalog services)."
    )
    primary_site = models.CharField(
        max_length=32, help_text="Primary ticketing platform, lower case (ticketmaster, axs, seatgeek…)."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SCHEDULED)
    canceled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["starts_at", "id"]
        permissions = [("cancel_event", "Can cancel an event and its open orders")]
        indexes = [
            # The list's cursor order, and its default "not started yet" filter.
            models.Index(fields=["starts_at", "id"], name="event_start_cursor"),
            models.Index(fields=["event_date", "starts_at", "id"], name="event_date_cursor"),
            models.Index(fields=["primary_site", "starts_at"], name="event_site_start"),
            models.Index(fields=["venue", "starts_at"], name="event_venue_start"),
            models.Index(fields=["status", "starts_at"], name="event_status_start"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.event_date})"

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def venue_starts_at(self) -> datetime:
        """The start in the event's time zone (aware): the venue's local date and time, whose date is
        ``event_date``."""
        return self.starts_at.astimezone(self.zone)

    @property
    def local_starts_at(self) -> datetime:
        """The start as a naive wall-clock time in the event's time zone."""
        return self.venue_starts_at.replace(tzinfo=None)

    @property
    def has_started(self) -> bool:
        return self.starts_at <= timezone.now()

    @property
    def is_canceled(self) -> bool:
        return self.status == self.Status.CANCELED


class EventStatusHistory(StatusHistory):
    """One row per move of ``Event.status`` (``catalog.services.event_transition``), and one for its creation."""

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="status_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "event status change"
        verbose_name_plural = "event status history"
        indexes = [models.Index(fields=["event", "at", "id"], name="event_history_event_at")]


class Section(models.Model):
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="sections")
    name = models.CharField(max_length=100, help_text="As partners send it in URLs and quotes.")
    name_display = models.CharField(max_length=150)
    general_admission = models.BooleanField(default=False)

    class Meta:
        ordering = ["event", "name"]
        constraints = [models.UniqueConstraint(fields=["event", "name"], name="section_unique_name")]

    def __str__(self) -> str:
        return self.name_display or self.name


class Row(models.Model):
    section = models.ForeignKey(Section, on_delete=models.CASCADE, related_name="rows")
    name = models.CharField(max_length=50)
    name_display = models.CharField(max_length=100)
    available_quantity = models.PositiveIntegerField(
        default=0, help_text="How many more tickets the service buys in this row."
    )
    offer_price = models.DecimalField(max_digits=10, decimal_places=2, help_text="Paid per ticket, USD.")
    face_value = models.DecimalField(max_digits=10, decimal_places=2, help_text="Per ticket, USD.")
    restrictions = models.JSONField(default=list, blank=True, validators=[validate_restrictions])
    restriction_detail = models.TextField(null=True, blank=True)

    class Meta:
        ordering = ["section", "name"]
        permissions = [("adjust_row_quantity", "Can adjust a row's available quantity")]
        constraints = [
            models.UniqueConstraint(fields=["section", "name"], name="row_unique_name"),
            models.CheckConstraint(
                condition=models.Q(available_quantity__gte=0), name="row_available_quantity_gte_0"
            ),
            models.CheckConstraint(condition=models.Q(offer_price__gte=0), name="row_offer_price_gte_0"),
            models.CheckConstraint(condition=models.Q(face_value__gte=0), name="row_face_value_gte_0"),
        ]

    def __str__(self) -> str:
        return self.name_display or self.name


class RowQuantityAdjustment(models.Model):
    """A staff correction of a row's capacity: +/− ``delta`` tickets, applied relative to the quantity at
    the moment it was saved (``catalog.services.row_quantity_adjust``), so it never undoes an order."""

    row = models.ForeignKey(Row, on_delete=models.CASCADE, related_name="quantity_adjustments")
    delta = models.IntegerField(help_text="Tickets added (positive) or removed (negative).")
    reason = models.CharField(max_length=500)
    actor = models.CharField(max_length=200, help_text="Who asked for it (staff:<username>).")
    at = models.DateTimeField(db_index=True)
    quantity_after = models.PositiveIntegerField(help_text="The row's available quantity right after it.")

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~models.Q(delta=0), name="row_quantity_adjustment_delta_not_0")
        ]

    def __str__(self) -> str:
        return f"{self.delta:+d} on {self.row} ({self.reason})"
