"""Reads of payment methods, charges and payouts, always scoped to one partner (the staff dashboard's figures
are the exception: ``money_figures`` without a partner). The portal's dashboard readiness and its monthly
statement have modules of their own."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, DecimalField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from config.core.modes import PartnerMode
from orders.models import Order
from orders.selectors import orders_active

from ..models import Charge, CreditCard, Payout, PayoutAccount, PayoutTotal

ZERO = Decimal("0.00")
_ZERO = Value(ZERO, output_field=DecimalField(max_digits=14, decimal_places=2))


def partner_has_active_orders(*, partner_pk: int) -> bool:
    """Does the partner have orders that are not yet paid, canceled or expired?"""
    # Test orders are charged on the sandbox and never paid out: replacing a real method does not concern them.
    return orders_active(principal=PartnerMode(pk=partner_pk, livemode=True)).exists()


PAYOUT_LIST_ORDERING = ("-created_at", "-id")


def payout_list_for_partner(*, partner_pk: int, status: str | None = None) -> QuerySet[Payout]:
    """The partner's payouts, newest first, with their order."""
    queryset = Payout.objects.filter(partner_id=partner_pk).select_related("order", "order__event")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by(*PAYOUT_LIST_ORDERING)


@dataclass(frozen=True)
class PaymentMethods:
    account: PayoutAccount | None
    card: CreditCard | None


def payment_methods_of_partner(*, partner_pk: int) -> PaymentMethods:
    """The partner's payout account and card on file (masked: what the platform handed back)."""
    return PaymentMethods(
        account=PayoutAccount.objects.filter(partner_id=partner_pk).first(),
        card=CreditCard.objects.filter(partner_id=partner_pk).first(),
    )


@dataclass(frozen=True)
class PayoutTotals:
    paid: Decimal  # paid out, ever
    in_flight: Decimal  # pending, in process or scheduled
    failed: int  # payouts failed (until staff retry them)


def payout_totals(*, partner_pk: int) -> PayoutTotals:
    """The partner's payouts summed up, in one query (the portal's dashboard, payouts page and readiness): the
    partner's few rows of ``PayoutTotal`` summed per status, kept by the database as payouts change, so the read
    costs the same at any number of payouts."""
    by_status = {
        row["status"]: (row["total"], row["payouts"])
        for row in PayoutTotal.objects.filter(partner_id=partner_pk)
        .values("status")
        .annotate(total=Sum("amount"), payouts=Sum("count"))
        .order_by("status")
    }
    return PayoutTotals(
        paid=by_status.get(Payout.Status.PAID, (ZERO, 0))[0],
        in_flight=sum((by_status.get(s, (ZERO, 0))[0] for s in Payout.IN_FLIGHT_STATUSES), ZERO),
        failed=by_status.get(Payout.Status.FAILED, (ZERO, 0))[1],
    )


@dataclass(frozen=True)
class MoneyFigures:
    orders: int  # orders created, whatever became of them
    tickets: int  # tickets of the orders created that were not canceled
    bought: Decimal  # total price of the orders created that were not canceled
    charged: Decimal  # card charges that succeeded
    refunded: Decimal  # refunds to the card that succeeded
    paid_out: Decimal  # payouts paid


def _in_range(queryset: QuerySet, *, field: str, start: datetime, end: datetime, partner_pk: int | None):
    queryset = queryset.filter(**{f"{field}__gte": start, f"{field}__lt": end})
    return queryset if partner_pk is None else queryset.filter(partner_id=partner_pk)


def orders_created(*, start: datetime, end: datetime, partner_pk: int | None = None) -> QuerySet[Order]:
    """Live orders created in ``[start, end)``, whatever became of them (test orders are never money)."""
    return _in_range(Order.objects.live(), field="created_at", start=start, end=end, partner_pk=partner_pk)


def charges_succeeded(*, start: datetime, end: datetime, partner_pk: int | None = None) -> QuerySet[Charge]:
    # A charge has no separate "succeeded at": it is made (and answered) when the order is confirmed.
    charges = Charge.objects.filter(status=Charge.Status.SUCCEEDED)
    return _in_range(charges, field="created_at", start=start, end=end, partner_pk=partner_pk)


def refunds_succeeded(*, start: datetime, end: datetime, partner_pk: int | None = None) -> QuerySet[Charge]:
    charges = Charge.objects.filter(refund_status=Charge.RefundStatus.SUCCEEDED)
    return _in_range(charges, field="refunded_at", start=start, end=end, partner_pk=partner_pk)


def payouts_paid(*, start: datetime, end: datetime, partner_pk: int | None = None) -> QuerySet[Payout]:
    payouts = Payout.objects.filter(status=Payout.Status.PAID)
    return _in_range(payouts, field="paid_at", start=start, end=end, partner_pk=partner_pk)


def money_figures(*, start: datetime, end: datetime, partner_pk: int | None = None) -> MoneyFigures:
    """What was bought, charged, refunded and paid out in ``[start, end)``: of one partner (its monthly
    statement) or of every partner (the staff dashboard). Four aggregate queries over indexed times."""
    span = {"start": start, "end": end, "partner_pk": partner_pk}
    not_canceled = ~Q(status=Order.Status.CANCELED)
    orders = orders_created(**span).aggregate(
        orders=Count("id"),
        tickets=Coalesce(Sum("quantity", filter=not_canceled), 0),
        bought=Coalesce(Sum("total_price", filter=not_canceled), _ZERO),
    )
    total = {"total": Coalesce(Sum("amount"), _ZERO)}
    return MoneyFigures(
        **orders,
        charged=charges_succeeded(**span).aggregate(**total)["total"],
        refunded=refunds_succeeded(**span).aggregate(**total)["total"],
        paid_out=payouts_paid(**span).aggregate(**total)["total"],
    )
