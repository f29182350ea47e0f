"""Staff admin for payment methods (masked), charges and payouts (with the retry of failed payouts), and the
sandbox platform's records. Everything here is read-only except what goes through a service."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from . import services
from .models import (
    Charge,
    CreditCard,
    Payout,
    PayoutAccount,
    SandboxAccount,
    SandboxCard,
    SandboxCharge,
    SandboxPayout,
    SandboxRefund,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def _order_link(order) -> str:
    return format_html(
        '<a href="{}">{}</a>', reverse("admin:orders_order_change", args=[order.pk]), order.order_id
    )


# --- payment methods: masked, and only ever written from the portal ---------------------------------------------
@admin.register(PayoutAccount)
class PayoutAccountAdmin(ReadOnlyAdmin):
    list_display = (
        "partner",
        "masked",
        "method",
        "platform",
        "platform_account_id",
        "connected_at",
        "updated_at",
    )
    list_filter = ("method", "platform")
    search_fields = ("partner__name", "partner__public_id", "platform_account_id")
    list_select_related = ("partner",)
    fields = ("partner", "masked", "method", "platform", "platform_account_id", "connected_at", "updated_at")
    readonly_fields = fields

    @admin.display(description="Account")
    def masked(self, obj: PayoutAccount) -> str:
        return f"{obj.bank_name} ••••{obj.last4}" if obj.last4 else "—"


@admin.register(CreditCard)
class CreditCardAdmin(ReadOnlyAdmin):
    list_display = ("partner", "masked", "expiry", "platform", "added_at", "updated_at")
    list_filter = ("brand", "platform")
    search_fields = ("partner__name", "partner__public_id")
    list_select_related = ("partner",)
    fields = ("partner", "masked", "expiry", "platform", "platform_card_token", "added_at", "updated_at")
    readonly_fields = fields

    @admin.display(description="Card")
    def masked(self, obj: CreditCard) -> str:
        return f"{obj.brand} ••••{obj.last4}" if obj.last4 else "—"

    @admin.display(description="Expires")
    def expiry(self, obj: CreditCard) -> str:
        return f"{obj.exp_month:02d}/{obj.exp_year}" if obj.exp_month else "—"


class PayoutAccountInline(admin.StackedInline):
    """On the partner page: the payout method, masked, read-only (partners connect it in the portal)."""

    model = PayoutAccount
    fields = ("masked", "method", "platform", "platform_account_id", "updated_at")
    readonly_fields = fields
    can_delete = False
    extra = 0
    max_num = 0
    verbose_name = verbose_name_plural = "Payout method"

    @admin.display(description="Account")
    def masked(self, obj: PayoutAccount) -> str:
        return f"{obj.bank_name} ••••{obj.last4}" if obj.last4 else "—"


class CreditCardInline(admin.StackedInline):
    model = CreditCard
    fields = ("masked", "expiry", "platform", "updated_at")
    readonly_fields = fields
    can_delete = False
    extra = 0
    max_num = 0
    verbose_name = verbose_name_plural = "Credit card on file"

    @admin.display(description="Card")
    def masked(self, obj: CreditCard) -> str:
        return f"{obj.brand} ••••{obj.last4}" if obj.last4 else "—"

    @admin.display(description="Expires")
    def expiry(self, obj: CreditCard) -> str:
        return f"{obj.exp_month:02d}/{obj.exp_year}" if obj.exp_month else "—"


# --- charges and payouts ----------------------------------------------------------------------------------------------
@admin.register(Charge)
class ChargeAdmin(ReadOnlyAdmin):
    list_display = (
        "order_id_link",
        "partner",
        "amount",
        "currency",
        "status",
        "card",
        "failure_reason",
        "refund",
        "created_at",
    )
    list_filter = ("status", "refund_status", "platform", "created_at")
    date_hierarchy = "created_at"
    search_fields = (
        "order__order_id",
        "partner__name",
        "partner__public_id",
        "platform_charge_id",
        "platform_refund_id",
    )
    list_select_related = ("order", "partner")
    readonly_fields = [f.name for f in Charge._meta.fields]
    actions = ("retry_refund_action",)

    @admin.display(description="Order", ordering="order__order_id")
    def order_id_link(self, obj: Charge) -> str:
        return _order_link(obj.order)

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

    def get_actions(self, request):
        # The base class hides actions from users without change permission; retrying has its own check.
        actions = super().get_actions(request)
        if not request.user.has_perm("payouts.change_charge"):
            actions.pop("retry_refund_action", None)
        return actions

    @admin.action(description="Retry failed refunds (a new refund attempt at the payment platform)")
    def retry_refund_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor = f"staff:{request.user.get_username()}"
        retried = 0
        for charge in queryset.filter(refund_status=Charge.RefundStatus.FAILED):
            if services.refund_retry(charge=charge, actor=actor):
                self.log_change(request, charge, "Refund retry requested")
                retried += 1
        skipped = queryset.count() - retried
        messages.success(request, f"{retried} refund(s) will be retried now.")
        if skipped:
            messages.warning(
                request, f"{skipped} selected charge(s) had no failed refund and were left alone."
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
class PayoutAdmin(ReadOnlyAdmin):
    list_display = (
        "order_id_link",
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
    list_filter = (FailedFirstFilter, "status", "platform", "created_at", "paid_at")
    date_hierarchy = "created_at"
    search_fields = ("order__order_id", "partner__name", "partner__public_id", "platform_payout_id")
    list_select_related = ("order", "partner")
    readonly_fields = [f.name for f in Payout._meta.fields]
    actions = ("retry_action",)
    change_form_template = "admin/payouts/payout/change_form.html"

    @admin.display(description="Order", ordering="order__order_id")
    def order_id_link(self, obj: Payout) -> str:
        return _order_link(obj.order)

    @admin.display(description="Status", ordering="status")
    def status_badge(self, obj: Payout) -> str:
        color = {"failed": "#b42318", "paid": "#1a7f37"}.get(obj.status, "#12528a")
        return format_html('<strong style="color:{}">{}</strong>', color, obj.get_status_display())

    def get_actions(self, request):
        # The base class hides actions from users without change permission; retrying has its own check.
        actions = super().get_actions(request)
        if not request.user.has_perm("payouts.change_payout"):
            actions.pop("retry_action", None)
        return actions

    @admin.action(description="Retry failed payouts (a new attempt to the current payout account)")
    def retry_action(self, request: HttpRequest, queryset: QuerySet) -> None:
        retried = 0
        for payout in queryset.filter(status=Payout.Status.FAILED):
            if services.payout_retry(payout=payout, actor=f"staff:{request.user.get_username()}"):
                self.log_change(request, payout, "Retry requested")
                retried += 1
        skipped = queryset.count() - retried
        messages.success(request, f"{retried} payout(s) will be retried on the next progression run.")
        if skipped:
            messages.warning(request, f"{skipped} selected payout(s) were not failed and were left alone.")

    def get_urls(self):
        custom = [
            path(
                "<int:pk>/retry/",
                self.admin_site.admin_view(self.retry_view),
                name="payouts_payout_retry",
            )
        ]
        return custom + super().get_urls()

    def retry_view(self, request: HttpRequest, pk: int):
        payout = get_object_or_404(Payout, pk=pk)
        change_url = reverse("admin:payouts_payout_change", args=[pk])
        if request.method != "POST" or not request.user.has_perm("payouts.change_payout"):
            messages.error(request, "Retrying a payout needs a POST by staff allowed to change payouts.")
            return HttpResponseRedirect(change_url)
        if services.payout_retry(payout=payout, actor=f"staff:{request.user.get_username()}"):
            self.log_change(request, payout, "Retry requested")
            messages.success(request, "The payout will be retried on the next progression run.")
        else:
            messages.warning(request, "Only a failed payout can be retried.")
        return HttpResponseRedirect(change_url)


# --- the sandbox platform's side, for staff looking at what the simulator holds ---------------------------------
@admin.register(SandboxAccount)
class SandboxAccountAdmin(ReadOnlyAdmin):
    list_display = (
        "account_id",
        "reference",
        "holder_name",
        "method",
        "bank_name",
        "account_last4",
        "behavior",
        "created_at",
    )
    list_filter = ("method", "behavior")
    search_fields = ("account_id", "reference", "holder_name")


@admin.register(SandboxCard)
class SandboxCardAdmin(ReadOnlyAdmin):
    list_display = (
        "token",
        "customer_reference",
        "brand",
        "last4",
        "exp_month",
        "exp_year",
        "behavior",
        "created_at",
    )
    list_filter = ("brand", "behavior")
    search_fields = ("token", "customer_reference")


@admin.register(SandboxCharge)
class SandboxChargeAdmin(ReadOnlyAdmin):
    list_display = (
        "charge_id",
        "idempotency_key",
        "amount",
        "currency",
        "status",
        "failure_reason",
        "amount_refunded",
        "created_at",
    )
    list_filter = ("status",)
    search_fields = ("charge_id", "idempotency_key")


@admin.register(SandboxRefund)
class SandboxRefundAdmin(ReadOnlyAdmin):
    list_display = (
        "refund_id",
        "idempotency_key",
        "charge",
        "amount",
        "currency",
        "status",
        "failure_reason",
        "created_at",
    )
    list_filter = ("status",)
    search_fields = ("refund_id", "idempotency_key", "charge__charge_id")
    list_select_related = ("charge",)


@admin.register(SandboxPayout)
class SandboxPayoutAdmin(ReadOnlyAdmin):
    list_display = ("payout_id", "idempotency_key", "account", "amount", "currency", "created_at")
    search_fields = ("payout_id", "idempotency_key", "account__account_id")
    list_select_related = ("account",)
