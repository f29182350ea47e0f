"""Payment methods, masked and read-only (partners write them in the portal); the partner page shows them
(``payouts.backoffice.admin.partners``)."""

from django.contrib import admin

from config.core.history_admin import ReadOnlyAdmin

from ..models import (
    CreditCard,
    PayoutAccount,
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
