"""The sandbox platform's side, for staff looking at what the simulator holds."""

from django.contrib import admin

from config.core.history_admin import ReadOnlyAdmin

from .models import (
    SandboxAccount,
    SandboxCard,
    SandboxCharge,
    SandboxPayout,
    SandboxRefund,
)


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
