"""Reads of the partner portal: the filtered order list its page and CSV share, and the monthly statement.

Every function is scoped to one partner. The statement's month is ``[start, end)`` in the partner's time
zone (``statement_month``); each figure has its own function so the page, the CSV and the tests agree.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Q, QuerySet, Sum
from django.urls import reverse

from config.modes import Principal
from orders.models import Order
from payouts.models import Charge, CreditCard, Payout, PayoutAccount

from .models import Partner

# Rows fetched per round trip by the exports' server-side cursors: memory stays flat whatever the size.
EXPORT_CHUNK_SIZE = 500
ZERO = Decimal("0.00")


# --- dashboard readiness -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReadinessItem:
    """One thing the partner has to do (or know), shown on the dashboard as a callout with a link."""

    code: str  # suspended | payout_method | credit_card | charge_declined | refund_failed | payout_failed
    level: str  # err | warn: the callout's style
    title: str
    detail: str
    link_label: str
    link_url: str


@dataclass(frozen=True)
class Readiness:
    items: list[ReadinessItem]
    suspended: bool

    @property
    def ready(self) -> bool:
        """Only when nothing at all needs doing: never next to a callout that says otherwise."""
        return not self.items

    @property
    def codes(self) -> list[str]:
        return [item.code for item in self.items]


def readiness_for_dashboard(*, partner: Partner) -> Readiness:
    """Everything that stands between the partner and selling (or being paid), most blocking first.

    Suspended account, a payment method missing, the latest card charge declined (until the card is
    replaced), failed refunds and failed payouts (until staff retry them). ``ready`` only when none holds.
    """
    support = settings.DEFAULT_FROM_EMAIL
    payment_methods = reverse("portal:payment-methods")
    items: list[ReadinessItem] = []
    suspended = partner.status == Partner.Status.SUSPENDED
    if suspended:
        items.append(
            ReadinessItem(
                "suspended",
                "err",
                "Your account is suspended.",
                "The API refuses your tokens (403 ACCOUNT_SUSPENDED): no quotes or orders until our team "
                f"lifts the suspension. Contact support at {support}.",
                "Contact support",
                f"mailto:{_address(support)}",
            )
        )
    card = CreditCard.objects.filter(partner_id=partner.pk).only("updated_at").first()
    if not PayoutAccount.objects.filter(partner_id=partner.pk).exists():
        items.append(
            ReadinessItem(
                "payout_method",
                "warn",
                "Connect a payout account.",
                "Payouts go to your bank account (ACH recommended, or wire). Until it and a card are on file, "
                "POST /v1/quotes and POST /v1/orders answer 403 PAYOUT_METHOD_NOT_CONFIGURED.",
                "Connect payout account",
                payment_methods,
            )
        )
    if card is None:
        items.append(
            ReadinessItem(
                "credit_card",
                "warn",
                "Add a credit card.",
                "The card is charged when an order is confirmed. Until it and a payout account are on file, "
                "POST /v1/quotes and POST /v1/orders answer 403 PAYOUT_METHOD_NOT_CONFIGURED.",
                "Add card",
                f"{payment_methods}#credit-card",
            )
        )
    latest = (
        Charge.objects.filter(partner_id=partner.pk)
        .order_by("-created_at", "-pk")
        .only("status", "updated_at", "failure_reason", "order_id")
        .first()
    )
    # A card replaced after the decline is the fix: the next order is charged on the new card.
    if (
        latest is not None
        and latest.status == Charge.Status.FAILED
        and (card is None or card.updated_at < latest.updated_at)
    ):
        items.append(
            ReadinessItem(
                "charge_declined",
                "err",
                "Your card was declined.",
                f"The last card charge failed ({latest.failure_reason or 'no reason given'}) and its order "
                "was canceled. Every order you confirm fails the same way until you update the card.",
                "Update card",
                f"{payment_methods}#credit-card",
            )
        )
    failed_refunds = Charge.objects.filter(
        partner_id=partner.pk, refund_status=Charge.RefundStatus.FAILED
    ).count()
    if failed_refunds:
        items.append(
            ReadinessItem(
                "refund_failed",
                "err",
                f"{failed_refunds} refund{'s' if failed_refunds != 1 else ''} to your card failed.",
                "The money stays owed to you: our team looks into every failed refund and tries it again. "
                f"If the card was closed or replaced, contact support at {support} with the order id.",
                "See the canceled orders",
                f"{reverse('portal:orders')}?status=canceled",
            )
        )
    failed_payouts = Payout.objects.filter(partner_id=partner.pk, status=Payout.Status.FAILED).count()
    if failed_payouts:
        items.append(
            ReadinessItem(
                "payout_failed",
                "err",
                f"{failed_payouts} payout{'s' if failed_payouts != 1 else ''} failed.",
                "Check your payout account under Settings · Payment Methods; our team sends the payout again "
                f"once it is fixed. Questions: {support}.",
                "See failed payouts",
                f"{reverse('portal:payouts')}?status=failed",
            )
        )
    return Readiness(items=items, suspended=suspended)


def _address(from_email: str) -> str:
    """``Name <addr>`` → ``addr`` for a mailto link."""
    return from_email.rsplit("<", 1)[-1].rstrip(">").strip()


# --- orders ---------------------------------------------------------------------------------------------------
def order_list_for_portal(*, principal: Principal, filters: dict[str, Any] | None = None) -> QuerySet[Order]:
    """The partner's orders of the portal's mode (the Test/Live switch), newest first, narrowed by the orders
    page's filters (``OrderFilterForm``).

    ``created_from`` / ``created_to`` are dates in the active time zone (the portal activates the
    partner's), so the SQL must be built while that zone is active.
    """
    queryset = Order.objects.for_principal(principal).select_related("event", "payout")
    filters = filters or {}
    if filters.get("status"):
        queryset = queryset.filter(status=filters["status"])
    if q := (filters.get("q") or "").strip():
        queryset = queryset.filter(
            Q(order_id__iexact=q) | Q(partner_reference__icontains=q) | Q(event__name__icontains=q)
        )
    if filters.get("created_from"):
        queryset = queryset.filter(created_at__date__gte=filters["created_from"])
    if filters.get("created_to"):
        queryset = queryset.filter(created_at__date__lte=filters["created_to"])
    return queryset.order_by("-created_at", "-id")


# --- monthly statement ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StatementMonth:
    first_day: date  # the 1st of the month
    start: datetime  # midnight of the 1st in the partner's zone
    end: datetime  # midnight of the 1st of the next month, excluded

    @property
    def previous(self) -> date:
        return (
            date(self.first_day.year - 1, 12, 1)
            if self.first_day.month == 1
            else self.first_day.replace(month=self.first_day.month - 1)
        )

    @property
    def next(self) -> date:
        return (
            date(self.first_day.year + 1, 1, 1)
            if self.first_day.month == 12
            else self.first_day.replace(month=self.first_day.month + 1)
        )


def statement_month(*, year: int, month: int, tz: ZoneInfo) -> StatementMonth:
    """The month's bounds as instants: its first and the next month's first midnight in ``tz``."""
    first = date(year, month, 1)  # ValueError for a month outside 1–12
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return StatementMonth(
        first_day=first,
        start=datetime(first.year, first.month, 1, tzinfo=tz),
        end=datetime(following.year, following.month, 1, tzinfo=tz),
    )


def _orders_created(*, partner_pk: int, month: StatementMonth) -> QuerySet[Order]:
    # Statements are money: live orders only (a test order is never charged on a real card nor paid out).
    return Order.objects.live().filter(
        partner_id=partner_pk, created_at__gte=month.start, created_at__lt=month.end
    )


def _bought(*, partner_pk: int, month: StatementMonth) -> QuerySet[Order]:
    return _orders_created(partner_pk=partner_pk, month=month).exclude(status=Order.Status.CANCELED)


def _charges(*, partner_pk: int, month: StatementMonth) -> QuerySet[Charge]:
    # A charge has no separate "succeeded at": it is made (and answered) when the order is confirmed.
    return Charge.objects.filter(
        partner_id=partner_pk,
        status=Charge.Status.SUCCEEDED,
        created_at__gte=month.start,
        created_at__lt=month.end,
    )


def _refunds(*, partner_pk: int, month: StatementMonth) -> QuerySet[Charge]:
    return Charge.objects.filter(
        partner_id=partner_pk,
        refund_status=Charge.RefundStatus.SUCCEEDED,
        refunded_at__gte=month.start,
        refunded_at__lt=month.end,
    )


def statement_payouts(*, partner_pk: int, month: StatementMonth) -> QuerySet[Payout]:
    """The payouts paid in the month, in the order they were paid."""
    return (
        Payout.objects.filter(
            partner_id=partner_pk, status=Payout.Status.PAID, paid_at__gte=month.start, paid_at__lt=month.end
        )
        .select_related("order", "order__event")
        .order_by("paid_at", "pk")
    )


def statement_orders_created(*, partner_pk: int, month: StatementMonth) -> int:
    """Every order created in the month, whatever became of it."""
    return _orders_created(partner_pk=partner_pk, month=month).count()


def statement_tickets(*, partner_pk: int, month: StatementMonth) -> int:
    """Tickets of the month's orders that were not canceled."""
    return _bought(partner_pk=partner_pk, month=month).aggregate(s=Sum("quantity"))["s"] or 0


def statement_bought(*, partner_pk: int, month: StatementMonth) -> Decimal:
    """Total price of the month's orders that were not canceled."""
    return _bought(partner_pk=partner_pk, month=month).aggregate(s=Sum("total_price"))["s"] or ZERO


def statement_charged(*, partner_pk: int, month: StatementMonth) -> Decimal:
    """Succeeded card charges made in the month."""
    return _charges(partner_pk=partner_pk, month=month).aggregate(s=Sum("amount"))["s"] or ZERO


def statement_refunded(*, partner_pk: int, month: StatementMonth) -> Decimal:
    """Refunds to the card that succeeded in the month."""
    return _refunds(partner_pk=partner_pk, month=month).aggregate(s=Sum("amount"))["s"] or ZERO


def statement_paid_out(*, partner_pk: int, month: StatementMonth) -> Decimal:
    """Payouts paid in the month."""
    return statement_payouts(partner_pk=partner_pk, month=month).aggregate(s=Sum("amount"))["s"] or ZERO


@dataclass(frozen=True)
class StatementLine:
    at: datetime
    kind: str  # order | charge | refund | payout
    order_id: str
    partner_reference: str
    event_name: str
    amount: Decimal
    currency: str
    detail: str


def _card(charge) -> str:
    return f"{charge.card_brand} ••••{charge.card_last4}" if charge.card_last4 else ""


def _money_line(at, kind: str, record, detail: str) -> StatementLine:
    """A statement line of a charge, refund or payout: the money moved for one order."""
    order = record.order
    return StatementLine(
        at,
        kind,
        order.order_id,
        order.partner_reference,
        order.event.name,
        record.amount,
        record.currency,
        detail,
    )


def statement_lines(*, partner_pk: int, month: StatementMonth) -> Iterator[StatementLine]:
    """Every line of the month in time order: orders bought, card charges, refunds, payouts paid.

    Four server-side cursors, each already in time order, merged lazily: constant memory for any month.
    """
    orders = (
        _bought(partner_pk=partner_pk, month=month)
        .select_related("event")
        .order_by("created_at", "pk")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )
    charges = (
        _charges(partner_pk=partner_pk, month=month)
        .select_related("order", "order__event")
        .order_by("created_at", "pk")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )
    refunds = (
        _refunds(partner_pk=partner_pk, month=month)
        .select_related("order", "order__event")
        .order_by("refunded_at", "pk")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )
    payouts = statement_payouts(partner_pk=partner_pk, month=month).iterator(chunk_size=EXPORT_CHUNK_SIZE)
    streams = [
        (
            StatementLine(
                o.created_at,
                "order",
                o.order_id,
                o.partner_reference,
                o.event.name,
                o.total_price,
                "USD",
                f"{o.quantity} × {o.section_name_display}, {o.row_name_display} ({o.get_status_display()})",
            )
            for o in orders
        ),
        (_money_line(c.created_at, "charge", c, _card(c)) for c in charges),
        (_money_line(c.refunded_at, "refund", c, _card(c)) for c in refunds),
        (_money_line(p.paid_at, "payout", p, p.account_description) for p in payouts),
    ]
    return heapq.merge(*streams, key=lambda line: line.at)
