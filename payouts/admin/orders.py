"""The order page with its money: the charge (and its refund) and the payout beside the history, and the
retries of a failed refund or payout as buttons that lead to the same confirmation as the lists' actions."""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from orders.admin import OrderAdmin
from orders.models import Order

from .. import services
from ..models import (
    Charge,
    Payout,
)
from .common import retry_one
from .money import ChargeAdmin, PayoutAdmin


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

    def order_actions(self, request: HttpRequest, order: Order) -> list[tuple[str, str, str]]:
        actions = super().order_actions(request, order)
        charge = Charge.objects.filter(order=order).only("refund_status").first()
        if (
            charge
            and charge.refund_status == Charge.RefundStatus.FAILED
            and request.user.has_perm("payouts.change_charge")
        ):
            actions.append(
                ("Retry refund", reverse("admin:orders_order_retry_refund", args=[order.pk]), "retry")
            )
        payout = Payout.objects.filter(order=order).only("status").first()
        if (
            payout
            and payout.status == Payout.Status.FAILED
            and request.user.has_perm("payouts.change_payout")
        ):
            actions.append(
                ("Retry payout", reverse("admin:orders_order_retry_payout", args=[order.pk]), "retry")
            )
        return actions

    def get_urls(self):
        view = self.admin_site.admin_view
        custom = [
            path("<int:pk>/retry-refund/", view(self.retry_refund_view), name="orders_order_retry_refund"),
            path("<int:pk>/retry-payout/", view(self.retry_payout_view), name="orders_order_retry_payout"),
        ]
        return custom + super().get_urls()

    def _retry(self, request: HttpRequest, record, *, url_name: str, **kwargs) -> HttpResponse:
        order = record.order
        return retry_one(
            request,
            # The charge's or payout's own admin: the confirmation names the record as the list's action does.
            self.admin_site.get_model_admin(type(record)),
            record,
            action_url=reverse(f"admin:{url_name}", args=[order.pk]),
            back_url=reverse("admin:orders_order_change", args=[order.pk]),
            also_log=(order,),
            **kwargs,
        )

    def retry_refund_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        charge = get_object_or_404(Charge.objects.select_related("order", "partner"), order__pk=pk)
        actor = f"staff:{request.user.get_username()}"
        return self._retry(
            request,
            charge,
            url_name="orders_order_retry_refund",
            retry=lambda: services.refund_retry(charge=charge, actor=actor),
            what="this refund",
            effect=ChargeAdmin.RETRY_EFFECT,
            log_message="Refund retry requested",
            done="The refund will be retried now.",
            refused="Only a failed refund can be retried.",
        )

    def retry_payout_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        payout = get_object_or_404(Payout.objects.select_related("order", "partner"), order__pk=pk)
        actor = f"staff:{request.user.get_username()}"
        return self._retry(
            request,
            payout,
            url_name="orders_order_retry_payout",
            retry=lambda: services.payout_retry(payout=payout, actor=actor),
            what="this payout",
            effect=PayoutAdmin.RETRY_EFFECT,
            log_message="Retry requested",
            done="The payout will be retried on the next progression run.",
            refused="Only a failed payout can be retried.",
        )
