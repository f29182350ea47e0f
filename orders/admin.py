"""Staff admin for orders: find and inspect them, download the ticket PDF, move them through the life cycle.

Every status change here goes through ``orders.services.order_transition``; orders are never added or edited
as raw rows.
"""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html, format_html_join

from . import errors, services
from .models import Order, OrderStatusHistory


class OrderStatusHistoryInline(admin.TabularInline):
    model = OrderStatusHistory
    fields = ("at", "from_status", "to_status", "actor", "reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("at", "id")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = (
        "order_id",
        "status",
        "partner_name",
        "event_name",
        "section_row",
        "quantity",
        "total_price",
        "delivery_type",
        "in_hand_date",
        "created_at",
    )
    list_filter = (
        "status",
        ("partner", admin.RelatedOnlyFieldListFilter),
        ("event", admin.RelatedOnlyFieldListFilter),
        "delivery_type",
        "is_ready_to_deliver",
        "created_at",
        "in_hand_date",
    )
    search_fields = ("=order_id", "transfer_address", "partner_reference")
    date_hierarchy = "created_at"
    list_select_related = ("partner", "event")
    ordering = ("-created_at", "-id")
    actions = ("mark_ticket_received", "cancel_orders")
    inlines = (OrderStatusHistoryInline,)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "order_id",
                    "status",
                    "status_changed_at",
                    "partner",
                    "event_link",
                    "partner_reference",
                )
            },
        ),
        (
            "Delivery",
            {
                "fields": (
                    "delivery_type",
                    "is_ready_to_deliver",
                    "in_hand_date",
                    "transfer_address",
                    "ticket_pdf",
                    "seller_email",
                    "seller_name",
                )
            },
        ),
        (
            "Quote snapshot",
            {
                "fields": (
                    "quote_id_display",
                    "quote_expires_at",
                    "quantity",
                    "offer_price",
                    "face_value",
                    "total_price",
                    "section_name",
                    "section_name_display",
                    "row_name",
                    "row_name_display",
                    "general_admission",
                    "restrictions",
                    "restriction_detail",
                    "primary_site",
                    "seller_metadata",
                )
            },
        ),
        (
            "Confirmation",
            {
                "fields": (
                    "confirmation_started_at",
                    "confirmation_requeued_at",
                    "confirmation_email_sent_at",
                    "confirmation_email_to",
                )
            },
        ),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )

    def get_readonly_fields(self, request, obj=None):
        # Everything is read-only: orders change only through the life-cycle actions.
        return [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("partner", "event", "quote")

    # --- display -------------------------------------------------------------------------------------------
    @admin.display(description="Partner", ordering="partner__name")
    def partner_name(self, obj: Order) -> str:
        return obj.partner.name

    @admin.display(description="Event", ordering="event__starts_at")
    def event_name(self, obj: Order) -> str:
        return obj.event.name

    @admin.display(description="Event")
    def event_link(self, obj: Order) -> str:
        label = f"{obj.event.name} ({obj.event.event_id})"
        try:
            url = reverse("admin:catalog_event_change", args=[obj.event_id])
        except NoReverseMatch:
            return label
        return format_html('<a href="{}">{}</a>', url, label)

    @admin.display(description="Section / row")
    def section_row(self, obj: Order) -> str:
        return f"{obj.section_name_display} / {obj.row_name_display}"

    @admin.display(description="quote_id")
    def quote_id_display(self, obj: Order) -> str:
        return obj.quote_token

    @admin.display(description="Seller (quote user_metadata)")
    def seller_metadata(self, obj: Order) -> str:
        metadata = obj.quote.user_metadata if isinstance(obj.quote.user_metadata, dict) else {}
        if not metadata:
            return "—"
        return format_html_join(", ", "{}: {}", sorted(metadata.items()))

    @admin.display(description="Ticket PDF")
    def ticket_pdf(self, obj: Order) -> str:
        if not obj.has_ticket_file:
            return "—"
        url = reverse("admin:orders_order_ticket_pdf", args=[obj.pk])
        return format_html('<a href="{}">Download {}.pdf</a>', url, obj.order_id)

    # --- PDF download ----------------------------------------------------------------------------------------
    def get_urls(self):
        urls = super().get_urls()
        custom = [
            path(
                "<int:pk>/ticket.pdf",
                self.admin_site.admin_view(self.ticket_pdf_view),
                name="orders_order_ticket_pdf",
            )
        ]
        return custom + urls

    def ticket_pdf_view(self, request: HttpRequest, pk: int) -> FileResponse:
        """Streams the PDF from storage to staff who may view orders; the file itself is never public."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        order = get_object_or_404(Order, pk=pk)
        if not order.has_ticket_file:
            raise Http404("This order has no ticket PDF.")
        handle = default_storage.open(order.ticket_file.name, "rb")
        response = FileResponse(
            handle, content_type="application/pdf", as_attachment=True, filename=f"{order.order_id}.pdf"
        )
        response["Cache-Control"] = "private, no-store"
        return response

    # --- life-cycle actions ----------------------------------------------------------------------------------
    def _transition_selected(self, request, queryset, *, to: str, verb: str, reason: str) -> None:
        actor = f"staff:{request.user.get_username()}"
        moved, refused = [], []
        for order in queryset.order_by("pk"):
            try:
                services.order_transition(order=order, to=to, actor=actor, reason=reason)
            except errors.IllegalTransition as exc:
                refused.append(f"{order.order_id} ({exc.from_status})")
            else:
                moved.append(order.order_id)
        if moved:
            self.message_user(request, f"{verb}: {', '.join(moved)}.", messages.SUCCESS)
        if refused:
            self.message_user(
                request,
                f"Not {verb.lower()}, the life cycle does not allow it from: {', '.join(refused)}.",
                messages.ERROR,
            )

    @admin.action(description="Mark ticket received", permissions=["change"])
    def mark_ticket_received(self, request, queryset):
        self._transition_selected(
            request,
            queryset,
            to=Order.Status.TICKET_RECEIVED,
            verb="Marked ticket received",
            reason="Ticket received",
        )

    @admin.action(description="Cancel orders", permissions=["change"])
    def cancel_orders(self, request, queryset):
        self._transition_selected(
            request, queryset, to=Order.Status.CANCELED, verb="Canceled", reason="Canceled by staff"
        )
