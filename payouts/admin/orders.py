"""The order page with its money."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from orders.admin import OrderAdmin
from orders.models import Order

from ..models import (
    Charge,
    Payout,
)


# The order page shows its money: the charge and the payout. Orders sits below payouts and cannot name these
# models, so payouts registers the order admin again with them added (as methods.py does for the partner page).
class _OrderMoneyInline(admin.TabularInline):  # one line each, beside the history
    can_delete = False
    extra = 0
    max_num = 0

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Record")
    def record(self, obj) -> str:
        url = reverse(f"admin:payouts_{obj._meta.model_name}_change", args=[obj.pk])
        return format_html('<a href="{}">Open the {} #{}</a>', url, obj._meta.verbose_name, obj.pk)


class OrderChargeInline(_OrderMoneyInline):
    model = Charge
    fields = ("record", "status", "amount", "currency", "card", "failure_reason", "refund", "refunded_at")
    readonly_fields = fields
    verbose_name = verbose_name_plural = "Charge"

    @admin.display(description="Card")
    def card(self, obj: Charge) -> str:
        return f"{obj.card_brand} ••••{obj.card_last4}" if obj.card_last4 else "—"

    @admin.display(description="Refund status")
    def refund(self, obj: Charge) -> str:
        return obj.get_refund_status_display()


class OrderPayoutInline(_OrderMoneyInline):
    model = Payout
    fields = ("record", "status", "amount", "attempt", "scheduled_for", "paid_at", "failure_reason")
    readonly_fields = fields
    verbose_name = verbose_name_plural = "Payout"


admin.site.unregister(Order)


@admin.register(Order)
class OrderWithMoneyAdmin(OrderAdmin):
    inlines = (*OrderAdmin.inlines, OrderChargeInline, OrderPayoutInline)
