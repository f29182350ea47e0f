from orders.models import Order

# Order statuses after which a payment method can be replaced without billing problems (spec 5); the
# portal's pages read the group from here.
SETTLED_ORDER_STATUSES = Order.SETTLED_STATUSES


def partner_has_active_orders(*, partner_pk: int) -> bool:
    """Does the partner have orders that are not yet paid, canceled or expired?"""
    return Order.objects.filter(partner_id=partner_pk).exclude(status__in=Order.SETTLED_STATUSES).exists()


def payout_list_for_partner(*, partner_pk: int, status: str | None = None):
    """The partner's payouts, newest first, with their order."""
    from .models import Payout

    queryset = Payout.objects.filter(partner_id=partner_pk).select_related("order", "order__event")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-pk")
