"""The records behind the transfer cases, read-only: the inbound messages (the mail as text, the
authentication, every stage's verdict; the raw bytes as a download for staff who resolve cases) and the
evidence each proved. Live data by default, through the order."""

from __future__ import annotations

import json

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from config.core.admin_permissions import require, staff_may
from config.core.history_admin import ReadOnly
from config.core.modes import ModeFilter
from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage, TransferEvidence
from orders.transfers.staff.admin import display as show
from orders.transfers.staff.admin.order import link_html


class OrderModeFilter(ModeFilter):
    """Live by default, through the order (a case without an order counts as live: staff must see it)."""

    def queryset(self, request, queryset):
        selected = self._selected()
        if selected == self.ALL:
            return queryset
        if selected == self.LIVE:
            return queryset.filter(Q(order__livemode=True) | Q(order__isnull=True))
        return queryset.filter(order__livemode=False)


# --- the records behind the cases, read-only ---------------------------------------------------------------------
@admin.register(InboundMessage)
class InboundMessageAdmin(ReadOnly, admin.ModelAdmin):
    list_display = (
        "received_at",
        "channel",
        "recipient",
        "order",
        "platform",
        "kind",
        "authentic",
        "stage",
        "outcome",
    )
    list_filter = (OrderModeFilter, "channel", "stage", "outcome", "authentic", "platform", "received_at")
    search_fields = ("=order__order_id", "recipient", "=sha256", "message_id", "header_subject")
    list_select_related = ("order",)
    change_form_template = "admin/transfers/inboundmessage/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "order",
                    "recipient",
                    "channel",
                    "received_at",
                    "stage",
                    "outcome",
                    "authentic",
                    "raw_link",
                )
            },
        ),
        ("Envelope", {"fields": ("mail_from", "peer", "helo", "size", "sha256")}),
        (
            "Headers",
            {"fields": ("header_from", "header_subject", "header_date", "message_id", "platform", "kind")},
        ),
        ("The mail, as text", {"fields": ("mail",)}),
        ("Authentication", {"fields": ("authentication",)}),
        (
            "Every stage's verdict",
            {"fields": ("verdicts_shown", "attempts", "next_attempt_at", "processed_at")},
        ),
    )

    def get_readonly_fields(self, request, obj=None):
        return [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]

    @admin.display(description="Mail")
    def mail(self, obj: InboundMessage):
        return show.message_as_text(obj)

    @admin.display(description="Summary")
    def authentication(self, obj: InboundMessage):
        return show.auth_summary(obj)

    @admin.display(description="Verdicts")
    def verdicts_shown(self, obj: InboundMessage):
        return format_html("<pre>{}</pre>", json.dumps(obj.verdicts, indent=2, sort_keys=True, default=str))

    @admin.display(description="Raw message")
    def raw_link(self, obj: InboundMessage) -> str:
        return f"kept ({obj.size} bytes)" if obj.raw.name else "not kept"

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # The download is a button for staff who resolve cases; the others see that it is kept.
        if obj is not None and obj.raw.name and staff_may(request, RAW_PERMISSION):
            context["raw_url"] = reverse("admin:transfers_inboundmessage_raw", args=[obj.pk])
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_urls(self):
        custom = [
            path(
                "<int:pk>/raw.eml",
                self.admin_site.admin_view(self.raw_view),
                name="transfers_inboundmessage_raw",
            )
        ]
        return custom + super().get_urls()

    def raw_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The raw bytes as received, as a download (never shown inline: it is untrusted HTML and script)."""
        require(request, RAW_PERMISSION)
        message = get_object_or_404(InboundMessage, pk=pk)
        raw = raw_read(message)
        if raw is None:
            raise PermissionDenied("The raw message is not kept any more.")
        response = HttpResponse(raw, content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="message-{message.pk}.eml"'
        response["Cache-Control"] = "private, no-store"
        response["X-Content-Type-Options"] = "nosniff"
        return response


# Who reads a raw message: staff who judge cases (the raw bytes carry the seller's personal data).
RAW_PERMISSION = "transfers.resolve_transfer_case"


@admin.register(TransferEvidence)
class TransferEvidenceAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("order", "kind", "quantity", "seats_shown", "matched", "created_at")
    list_filter = (OrderModeFilter, "kind", "matched", "created_at")
    search_fields = ("=order__order_id", "order__transfer_address")
    list_select_related = ("order",)
    fields = (
        "order",
        "message",
        "kind",
        "quantity",
        "seats_shown",
        "matched",
        "accept",
        "fields_shown",
        "created_at",
    )
    readonly_fields = fields

    @admin.display(description="Seats")
    def seats_shown(self, obj: TransferEvidence) -> str:
        return ", ".join(str(s) for s in obj.seats) or "—"

    @admin.display(description="Accept link")
    def accept(self, obj: TransferEvidence):
        return link_html(obj.accept_link) if obj.accept_link else "—"

    @admin.display(description="What was read")
    def fields_shown(self, obj: TransferEvidence):
        return format_html("<pre>{}</pre>", json.dumps(obj.fields, indent=2, sort_keys=True, default=str))
