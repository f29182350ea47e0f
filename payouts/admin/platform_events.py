"""Card disputes (the staff cases the platform's ``charge.dispute.created`` opens) and the platform's events
as received: read-only, like the money they are about."""

from django.contrib import admin
from django.utils.html import format_html

from config.core.history_admin import ReadOnlyAdmin, StatusHistoryInline

from ..models import Dispute, DisputeStatusHistory, PlatformEvent
from .common import order_link


class DisputeStatusHistoryInline(StatusHistoryInline):
    model = DisputeStatusHistory


@admin.register(Dispute)
class DisputeAdmin(ReadOnlyAdmin):
    list_display = (
        "order_ref",
        "partner",
        "amount",
        "currency",
        "reason",
        "status_badge",
        "platform_status",
        "evidence_due_by",
        "created_at",
    )
    list_filter = ("status", "reason", "created_at")
    date_hierarchy = "created_at"
    search_fields = ("order__order_id", "partner__name", "partner__public_id", "platform_dispute_id")
    list_select_related = ("order", "partner")
    readonly_fields = ["order_id_link", *(f.name for f in Dispute._meta.fields if f.name != "order")]
    inlines = (DisputeStatusHistoryInline,)

    @admin.display(description="Order", ordering="order__order_id")
    def order_ref(self, obj: Dispute) -> str:
        return obj.order.order_id

    @admin.display(description="Order")
    def order_id_link(self, obj: Dispute) -> str:
        return order_link(obj.order)

    @admin.display(description="Status", ordering="status")
    def status_badge(self, obj: Dispute) -> str:
        color = "#b42318" if obj.status == Dispute.Status.OPEN else "#52606d"
        return format_html('<strong style="color:{}">{}</strong>', color, obj.get_status_display())


class ProcessedFilter(admin.SimpleListFilter):
    title = "processed"
    parameter_name = "processed"

    def lookups(self, request, model_admin):
        return [("no", "Not processed (failed, delivered again)"), ("yes", "Processed")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(processed_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(processed_at__isnull=False)
        return queryset


@admin.register(PlatformEvent)
class PlatformEventAdmin(ReadOnlyAdmin):
    list_display = ("event_id", "type", "account", "livemode", "occurred_at", "received_at", "outcome")
    list_filter = (ProcessedFilter, "type", "livemode", "received_at")
    date_hierarchy = "received_at"
    search_fields = ("event_id", "account", "outcome")
    readonly_fields = [f.name for f in PlatformEvent._meta.fields]
