"""The portal's monthly statement of one partner: the month in the partner's time zone, its figures, the
payouts paid in it and every line of it.

The month is ``[start, end)`` in the partner's time zone (``statement_month``); the figures are
``money_figures`` of that range, the same the staff dashboard shows for a day or a week.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db.models import QuerySet

from orders.models import Order
from partners.portal.exports import EXPORT_CHUNK_SIZE

from ..models import Payout
from . import (
    MoneyFigures,
    charges_succeeded,
    money_figures,
    orders_created,
    payouts_paid,
    refunds_succeeded,
)


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


def _span(partner_pk: int, month: StatementMonth) -> dict:
    return {"start": month.start, "end": month.end, "partner_pk": partner_pk}


def statement_payouts(*, partner_pk: int, month: StatementMonth) -> QuerySet[Payout]:
    """The payouts paid in the month, in the order they were paid."""
    return (
        payouts_paid(**_span(partner_pk, month))
        .select_related("order", "order__event")
        .order_by("paid_at", "pk")
    )


def statement_figures(*, partner_pk: int, month: StatementMonth) -> MoneyFigures:
    """The month's orders, tickets, and money bought, charged, refunded and paid out."""
    return money_figures(**_span(partner_pk, month))


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
        orders_created(**_span(partner_pk, month))
        .exclude(status=Order.Status.CANCELED)
        .select_related("event")
        .order_by("created_at", "pk")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )
    charges = (
        charges_succeeded(**_span(partner_pk, month))
        .select_related("order", "order__event")
        .order_by("created_at", "pk")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )
    refunds = (
        refunds_succeeded(**_span(partner_pk, month))
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
