"""Venues, performers and events (with their sections inline)."""

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Sum
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from config.core.admin_permissions import staff_may
from config.core.confirmation import confirm, staff_actor
from config.core.history_admin import status_history_table

from .. import services
from ..models import Event, Performer, Row, RowQuantityAdjustment, Section, Venue

ADJUSTMENTS_ON_EVENT_PAGE = 20


@admin.register(Venue)
class VenueAdmin(admin.ModelAdmin):
    list_display = ("name", "city", "state", "country", "timezone", "venue_id")
    search_fields = ("name", "city", "venue_id")
    list_filter = ("country",)
    readonly_fields = ("venue_id", "created_at")


@admin.register(Performer)
class PerformerAdmin(admin.ModelAdmin):
    list_display = ("name", "performer_id")
    search_fields = ("name", "performer_id")
    readonly_fields = ("performer_id",)


class SectionInline(admin.TabularInline):
    model = Section
    fields = ("name", "name_display", "general_admission")
    extra = 0
    show_change_link = True  # rows are edited inline on the section's page


class EventForm(forms.ModelForm):
    class Meta:
        model = Event
        fields = (
            "name",
            "external_id",
            "venue",
            "performers",
            "starts_at",
            "timezone",
            "primary_site",
            "status",
        )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "timezone" in self.fields:  # absent when the page is read-only (staff who may only view events)
            self.fields["timezone"].required = False
            self.fields["timezone"].help_text = "IANA name; leave empty to use the venue's."

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("timezone") and cleaned.get("venue"):
            cleaned["timezone"] = cleaned["venue"].timezone
            self.instance.timezone = cleaned["timezone"]
        return cleaned


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    form = EventForm
    list_display = (
        "name",
        "venue",
        "city",
        "starts_at",
        "event_date",
        "primary_site",
        "status_label",
        "event_id",
    )
    list_filter = (("event_date", admin.DateFieldListFilter), "primary_site", "status", "venue__country")
    search_fields = ("name", "venue__name", "venue__city", "event_id", "external_id")
    date_hierarchy = "event_date"
    list_select_related = ("venue",)
    autocomplete_fields = ("venue", "performers")
    readonly_fields = (
        "event_id",
        "event_date",
        "canceled_at",
        "status_history",
        "capacity",
        "quantity_adjustments",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("name", "event_id", "external_id", "venue", "performers")}),
        ("When", {"fields": ("starts_at", "timezone", "event_date")}),
        (
            "Sale",
            {
                "fields": (
                    "primary_site",
                    "status",
                    "canceled_at",
                    "status_history",
                    "capacity",
                    "quantity_adjustments",
                )
            },
        ),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )
    inlines = (SectionInline,)
    actions = ("cancel_events",)

    @admin.display(description="City", ordering="venue__city")
    def city(self, obj: Event) -> str:
        return obj.venue.city

    @admin.display(description="Status", ordering="status")
    def status_label(self, obj: Event) -> str:
        if obj.is_canceled:
            return format_html('<strong style="color:#ba2121">{}</strong>', "canceled")
        return "started" if obj.has_started else "scheduled"

    @admin.display(description="Status history")
    def status_history(self, obj: Event) -> str:
        return "—" if obj.pk is None else status_history_table(obj.status_history.order_by("at", "id"))

    @admin.display(description="Buy-back capacity")
    def capacity(self, obj: Event) -> str:
        if obj.pk is None:
            return "—"
        totals = Row.objects.filter(section__event=obj).aggregate(
            rows=Count("id"), tickets=Sum("available_quantity")
        )
        return f"{totals['tickets'] or 0} tickets in {totals['rows']} rows"

    @admin.display(description="Quantity adjustments")
    def quantity_adjustments(self, obj: Event) -> str:
        if obj.pk is None:
            return "—"
        latest = list(
            RowQuantityAdjustment.objects.filter(row__section__event=obj)
            .select_related("row__section")
            .order_by("-at", "-id")[: ADJUSTMENTS_ON_EVENT_PAGE + 1]
        )
        if not latest:
            return "None: the quantities changed through orders only."
        lines = format_html_join(
            "",
            "<tr><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    a.at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    a.row.section.name,
                    a.row.name,
                    f"{a.delta:+d}",
                    a.quantity_after,
                    a.reason,
                    a.actor,
                )
                for a in latest[:ADJUSTMENTS_ON_EVENT_PAGE]
            ),
        )
        more = ""
        if len(latest) > ADJUSTMENTS_ON_EVENT_PAGE:
            more = format_html(
                '<p><a href="{}?q={}">All adjustments of this event</a></p>',
                reverse("admin:catalog_rowquantityadjustment_changelist"),
                obj.event_id,
            )
        return format_html(
            "<table><thead><tr><th>At</th><th>Section / row</th><th>Change</th><th>After</th>"
            "<th>Reason</th><th>By</th></tr></thead><tbody>{}</tbody></table>{}",
            lines,
            more,
        )

    def save_model(self, request, obj: Event, form, change: bool) -> None:
        services.event_save(event=obj, actor=f"staff:{request.user.get_username()}")

    def save_related(self, request, form, formsets, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        services.catalog_changed()

    def has_cancel_event_permission(self, request, obj: Event | None = None) -> bool:
        return staff_may(request, "catalog.cancel_event")

    @admin.action(
        description="Cancel selected events (no new quotes or orders)", permissions=["cancel_event"]
    )
    def cancel_events(self, request, queryset):
        # Canceling an event cancels its open orders (refunds, e-mails, notifications): staff confirm and say why.
        events = list(queryset.select_related("venue").order_by("starts_at", "pk"))

        def act(data: dict) -> None:
            actor, reason = staff_actor(request), data["reason"]
            canceled = sum(services.event_cancel(event=e, actor=actor, reason=reason) for e in events)
            self.message_user(
                request,
                f"Canceled {canceled} event(s); {len(events) - canceled} were already canceled.",
                messages.SUCCESS,
            )

        return confirm(
            request,
            self,
            permissions=("catalog.cancel_event",),
            objects=events,
            describe=lambda e: (e.event_id, e.name, e.event_date, e.venue.name, e.get_status_display()),
            columns=("Event", "Name", "Date", "Venue", "Status"),
            title="Cancel these events?",
            effects=(
                "no new quote or order is accepted for them (EVENT_EXPIRED), and the read API shows them "
                "canceled;",
                "their open orders (accepted, awaiting transfer) are canceled with the reason “The event was "
                "canceled”: the quantity goes back, charged cards are refunded, sellers e-mailed, partners "
                "notified;",
                "events canceled already are left alone.",
            ),
            submit="Yes, cancel these events",
            reason_label="Reason (kept in each event's status history)",
            testid="confirm-cancel-events",
            act=act,
        )
