"""The partner page with its payment methods, masked and read-only (partners connect them in the portal)."""

from django.contrib import admin

from partners.admin import PartnerAdmin
from partners.models import Partner

from ...models import CreditCard, PayoutAccount


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


# Partners sits below payouts and cannot name these inlines: its PartnerAdmin stays unregistered and is
# registered here, once, with them added.
@admin.register(Partner)
class PartnerWithPaymentMethodsAdmin(PartnerAdmin):
    inlines = (*PartnerAdmin.inlines, PayoutAccountInline, CreditCardInline)
