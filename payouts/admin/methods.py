"""Payment methods, masked and read-only (partners write them in the portal), and the partner page that
shows them."""

from django.contrib import admin

from config.core.history_admin import ReadOnlyAdmin
from partners.admin import PartnerAdmin
from partners.models import Partner

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


# The partner page shows its payment methods. Partners sits below payouts and cannot name these inlines, so
# payouts registers the partner admin again with them added.
admin.site.unregister(Partner)


@admin.register(Partner)
class PartnerWithPaymentMethodsAdmin(PartnerAdmin):
    inlines = (*PartnerAdmin.inlines, PayoutAccountInline, CreditCardInline)
