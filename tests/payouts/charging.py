"""One order's charge, as the confirmation makes it: a batch of one, under the order's row lock."""

from django.db import transaction

from orders.models import Order
from payouts.models import Charge
from payouts.services.charges import orders_charge


def charge_order(*, order: Order) -> Charge:
    """Charge ``order`` (idempotent per order); the platform's error for it is raised."""
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        answer = orders_charge(orders=[locked])[order.pk]
    if isinstance(answer, Exception):
        raise answer
    return answer
