from dataclasses import dataclass, field

from partners.models import Partner


@dataclass(frozen=True)
class PaymentReadiness:
    """What a partner still has to set up before quotes and orders are accepted (spec 1, 7.4)."""

    missing: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.missing


def payment_readiness(*, partner_pk: int) -> PaymentReadiness:
    """One query: does the partner have a payout method and a credit card on file?"""
    # A slice, not .first(): no ORDER BY on a query every quote and order runs.
    rows = Partner.objects.filter(pk=partner_pk).values_list("payout_account__id", "credit_card__id")[:1]
    row = next(iter(rows), None)
    if row is None:
        return PaymentReadiness(missing=["payout_method", "credit_card"])
    payout_id, card_id = row
    missing = []
    if payout_id is None:
        missing.append("payout_method")
    if card_id is None:
        missing.append("credit_card")
    return PaymentReadiness(missing=missing)


# Order statuses after which a payment method can be replaced without billing problems (spec 5).
SETTLED_ORDER_STATUSES = ("paid", "canceled", "expired")


def partner_has_active_orders(*, partner_pk: int) -> bool:
    """Does the partner have orders that are not yet paid, canceled or expired?"""
    from orders.models import Order

    return Order.objects.filter(partner_id=partner_pk).exclude(status__in=SETTLED_ORDER_STATUSES).exists()


def payout_list_for_partner(*, partner_pk: int, status: str | None = None):
    """The partner's payouts, newest first, with their order."""
    from .models import Payout

    queryset = Payout.objects.filter(partner_id=partner_pk).select_related("order", "order__event")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-pk")
