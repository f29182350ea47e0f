"""The order page with its money: the charge (and its refund) and the payout beside the history, and the
retries of a failed refund or payout as buttons that lead to the same confirmation as the lists' actions."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from config.core.admin_permissions import require, staff_may
from config.core.history_admin import ReadOnly
from orders.admin import OrderAdmin
from orders.models import Order

from ...admin.common import retry_one
from ...admin.money import ChargeAdmin, PayoutAdmin
from ...models import (
    Charge,
    Payout,
)
from ...services.progression import payout_retry
from ...services.refunds import refund_retry


# The order page shows its money: the charge and the payout. Orders sits below payouts and cannot name these
# models, so its OrderAdmin stays unregistered and the back office registers it here, once, with them added.
class _OrderMoneyInline(ReadOnly, admin.TabularInline):  # one line each, beside the history
    can_delete = False
    extra = 0
    max_num = 0

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


@dataclass(frozen=True)
class _Retry:
    """A retry the order page offers as a button when its record failed."""

    label: str
    model: type
    permission: str
    failed: Callable[[Any], bool]
    retry: Callable[..., bool]  # the service, called with the record and the actor
    what: str
    effect: str
    log_message: str
    done: str
    refused: str


RETRIES = {
    "refund": _Retry(
        "Retry refund",
        Charge,
        "payouts.retry_refund",
        lambda charge: charge.refund_status == Charge.RefundStatus.FAILED,
        lambda charge, actor: refund_retry(charge=charge, actor=actor),
        "this refund",
        ChargeAdmin.RETRY_EFFECT,
        "Refund retry requested",
        "The refund will be retried now.",
        "Only a failed refund can be retried.",
    ),
    "payout": _Retry(
        "Retry payout",
        Payout,
        "payouts.retry_payout",
        lambda payout: payout.status == Payout.Status.FAILED,
        lambda payout, actor: payout_retry(payout=payout, actor=actor),
        "this payout",
        PayoutAdmin.RETRY_EFFECT,
        "Retry requested",
        "The payout will be retried on the next progression run.",
        "Only a failed payout can be retried.",
    ),
}


@admin.register(Order)
class OrderWithMoneyAdmin(OrderAdmin):
    inlines = (*OrderAdmin.inlines, OrderChargeInline, OrderPayoutInline)

    def order_actions(self, request: HttpRequest, order: Order) -> list[tuple[str, str, str]]:
        actions = super().order_actions(request, order)
        for kind, retry in RETRIES.items():
            record = retry.model.objects.filter(order=order).first()
            if record and retry.failed(record) and staff_may(request, retry.permission):
                url = reverse(f"admin:orders_order_retry_{kind}", args=[order.pk])
                actions.append((retry.label, url, "retry"))
        return actions

    def get_urls(self):
        custom = [
            path(
                f"<int:pk>/retry-{kind}/",
                self.admin_site.admin_view(partial(self.retry_view, kind=kind)),
                name=f"orders_order_retry_{kind}",
            )
            for kind in RETRIES
        ]
        return custom + super().get_urls()

    def retry_view(self, request: HttpRequest, pk: int, *, kind: str) -> HttpResponse:
        """The order page's retry buttons: the list action's confirmation, then back to the order."""
        retry = RETRIES[kind]
        require(request, retry.permission)
        record = get_object_or_404(retry.model.objects.select_related("order", "partner"), order__pk=pk)
        actor = f"staff:{request.user.get_username()}"
        return retry_one(
            request,
            # The charge's or payout's own admin: the confirmation names the record as the list's action does.
            self.admin_site.get_model_admin(retry.model),
            record,
            retry=lambda: retry.retry(record, actor),
            permission=retry.permission,
            what=retry.what,
            effect=retry.effect,
            action_url=reverse(f"admin:orders_order_retry_{kind}", args=[pk]),
            back_url=reverse("admin:orders_order_change", args=[pk]),
            log_message=retry.log_message,
            done=retry.done,
            refused=retry.refused,
            also_log=(record.order,),
        )
