"""Charges and payouts: read-only records that open from their lists, and the confirmed retries of failed
refunds and payouts."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from config.core.admin_permissions import staff_may
from config.core.admin_scale import LargeTableAdmin
from config.core.history_admin import ReadOnlyAdmin, StatusHistoryInline

from ..models import (
    Charge,
    ChargeStatusHistory,
    Payout,
    PayoutStatusHistory,
    RefundStatusHistory,
)
from ..platform.registry import PLATFORMS
from ..services.progression import payout_retry
from ..services.refunds import refund_retry
from .common import order_link, retry_many, retry_one


class ChargeStatusHistoryInline(StatusHistoryInline):
    model = ChargeStatusHistory
    verbose_name_plural = "Charge status history (why a charge failed)"


class RefundStatusHistoryInline(StatusHistoryInline):
    model = RefundStatusHistory
    verbose_name_plural = "refund status history"


class PayoutStatusHistoryInline(StatusHistoryInline):
    model = PayoutStatusHistory


class PlatformFilter(admin.SimpleListFilter):
    """The payment platforms of the registry (``payouts.platform.registry``): listing the values in the table
    would be a DISTINCT over every charge or payout."""

    title = "platform"
    parameter_name = "platform__exact"

    def lookups(self, request, model_admin):
        return [(name, name) for name in PLATFORMS]

    def queryset(self, request, queryset):
        return queryset.filter(platform=self.value()) if self.value() else queryset


# --- charges and payouts ----------------------------------------------------------------------------------------------
@admin.register(Charge)
class ChargeAdmin(LargeTableAdmin, ReadOnlyAdmin):
    list_display = (
        "order_ref",
        "partner",
        "amount",
        "currency",
        "status",
        "card",
        "failure_reason",
        "refund",
        "created_at",
    )
    list_filter = ("status", "refund_status", PlatformFilter, "created_at")
    # The platform's ids whole, the order's id, or a partner by its id or a fragment of its name
    # (config/core/admin_scale.py).
    search_fields = ("platform_charge_id",)
    exact_search = ("platform_charge_id", "platform_refund_id")
    related_search = {"order": ("order_id",), "partner": ("public_id", "name__icontains")}
    list_select_related = ("order", "partner")
    readonly_fields = ["order_id_link", *(f.name for f in Charge._meta.fields if f.name != "order")]
    actions = ("retry_refund_action",)
    inlines = (ChargeStatusHistoryInline, RefundStatusHistoryInline)

    # The first column opens the charge (read-only); the order is linked from the charge's page. An order link
    # in the first column would swallow the row's own link.
    @admin.display(description="Order", ordering="order__order_id")
    def order_ref(self, obj: Charge) -> str:
        return obj.order.order_id

    @admin.display(description="Order")
    def order_id_link(self, obj: Charge) -> str:
        return order_link(obj.order)

    @admin.display(description="Card")
    def card(self, obj: Charge) -> str:
        return f"{obj.card_brand} ••••{obj.card_last4}" if obj.card_last4 else "—"

    @admin.display(description="Refund", ordering="refund_status")
    def refund(self, obj: Charge) -> str:
        if obj.refund_status == Charge.RefundStatus.NONE:
            return "—"
        color = {"failed": "#b42318", "succeeded": "#1a7f37"}.get(obj.refund_status, "#12528a")
        note = obj.refund_failure_reason or obj.refund_last_error
        return format_html(
            '<strong style="color:{}">{}</strong>{}',
            color,
            obj.get_refund_status_display(),
            format_html("<br><small>{}</small>", note) if note else "",
        )

    def has_retry_refund_permission(self, request: HttpRequest, obj: Charge | None = None) -> bool:
        return staff_may(request, "payouts.retry_refund")

    RETRY_EFFECT = (
        "Each charge whose refund failed gets a new refund attempt at the payment platform now; the others are "
        "left alone."
    )

    @admin.action(
        description="Retry failed refunds (a new refund attempt at the payment platform)",
        permissions=["retry_refund"],
    )
    def retry_refund_action(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        # A retry moves money at the platform: staff confirm it and say why, and the reason is logged.
        actor = f"staff:{request.user.get_username()}"
        return retry_many(
            request,
            self,
            queryset,
            failed=queryset.filter(refund_status=Charge.RefundStatus.FAILED),
            retry=lambda charge: refund_retry(charge=charge, actor=actor),
            permission="payouts.retry_refund",
            what="these refunds",
            effect=self.RETRY_EFFECT,
            action_url=reverse("admin:payouts_charge_changelist"),
            log_message="Refund retry requested",
            done="{n} refund(s) will be retried now.",
            skipped="{n} selected charge(s) had no failed refund and were left alone.",
        )


class FailedFirstFilter(admin.SimpleListFilter):
    title = "needs attention"
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [("failed", "Failed"), ("stuck", "Transient errors")]

    def queryset(self, request, queryset):
        if self.value() == "failed":
            return queryset.filter(status=Payout.Status.FAILED)
        if self.value() == "stuck":
            return queryset.exclude(last_error="")
        return queryset


@admin.register(Payout)
class PayoutAdmin(LargeTableAdmin, ReadOnlyAdmin):
    list_display = (
        "order_ref",
        "partner",
        "amount",
        "status_badge",
        "attempt",
        "account_description",
        "scheduled_for",
        "paid_at",
        "failure_reason",
        "created_at",
    )
    list_filter = (FailedFirstFilter, "status", PlatformFilter, "created_at", "paid_at")
    search_fields = ("platform_payout_id",)  # as the charges' (config/core/admin_scale.py)
    exact_search = ("platform_payout_id",)
    related_search = {"order": ("order_id",), "partner": ("public_id", "name__icontains")}
    list_select_related = ("order", "partner")
    readonly_fields = ["order_id_link", *(f.name for f in Payout._meta.fields if f.name != "order")]
    actions = ("retry_action",)
    inlines = (PayoutStatusHistoryInline,)
    change_form_template = "admin/payouts/payout/change_form.html"

    # As for charges: the first column opens the payout, its page links the order.
    @admin.display(description="Order", ordering="order__order_id")
    def order_ref(self, obj: Payout) -> str:
        return obj.order.order_id

    @admin.display(description="Order")
    def order_id_link(self, obj: Payout) -> str:
        return order_link(obj.order)

    @admin.display(description="Status", ordering="status")
    def status_badge(self, obj: Payout) -> str:
        color = {"failed": "#b42318", "paid": "#1a7f37"}.get(obj.status, "#12528a")
        return format_html('<strong style="color:{}">{}</strong>', color, obj.get_status_display())

    def has_retry_payout_permission(self, request: HttpRequest, obj: Payout | None = None) -> bool:
        return staff_may(request, "payouts.retry_payout")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["can_retry"] = self.has_retry_payout_permission(request)
        return super().render_change_form(request, context, add, change, form_url, obj)

    RETRY_EFFECT = (
        "Each failed payout gets a new attempt (its attempt number goes up by one) to the partner's payout "
        "account on file now; payouts that are not failed are left alone."
    )

    @admin.action(
        description="Retry failed payouts (a new attempt to the current payout account)",
        permissions=["retry_payout"],
    )
    def retry_action(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        # A retry sends money again: staff confirm it and say why, and the reason is logged.
        actor = f"staff:{request.user.get_username()}"
        return retry_many(
            request,
            self,
            queryset,
            failed=queryset.filter(status=Payout.Status.FAILED),
            retry=lambda payout: payout_retry(payout=payout, actor=actor),
            permission="payouts.retry_payout",
            what="these payouts",
            effect=self.RETRY_EFFECT,
            action_url=reverse("admin:payouts_payout_changelist"),
            log_message="Retry requested",
            done="{n} payout(s) will be retried on the next progression run.",
            skipped="{n} selected payout(s) were not failed and were left alone.",
        )

    def get_urls(self):
        custom = [
            path(
                "<int:pk>/retry/",
                self.admin_site.admin_view(self.retry_view),
                name="payouts_payout_retry",
            )
        ]
        return custom + super().get_urls()

    def retry_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        # The button leads here first: the same confirmation as the list's action, posting back to this URL.
        payout = get_object_or_404(Payout, pk=pk)
        return retry_one(
            request,
            self,
            payout,
            retry=lambda: payout_retry(payout=payout, actor=f"staff:{request.user.get_username()}"),
            permission="payouts.retry_payout",
            what="this payout",
            effect=self.RETRY_EFFECT,
            action_url=reverse("admin:payouts_payout_retry", args=[pk]),
            back_url=reverse("admin:payouts_payout_change", args=[pk]),
            log_message="Retry requested",
            done="The payout will be retried on the next progression run.",
            refused="Only a failed payout can be retried.",
        )
