"""The staff dashboard on the admin's index: what was bought and paid today and this week, the trend, and the
queues of work that needs a person. Live data only: test-mode orders and endpoints never count.

Every figure is one aggregate query over an indexed column, so the page stays fast at any number of orders
(measured at 100,000 in ``bench/dashboard.py``). Figures are UTC days and ISO weeks (Monday first).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from urllib.parse import urlencode

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from orders.models import Order
from orders.selectors import DUE_SOON, OVERDUE, awaiting_transfer_by_deadline, transfer_deadline
from orders.transfers.models import TransferCase
from orders.webhooks.models import WebhookEndpoint

from ..models import Charge, Dispute, Payout
from ..selectors import money_figures

S = Order.Status
CHART_DAYS = 30
CHART_WEEKS = 12
# Chart colours per status, in stacking order (bottom first): the life cycle's path, then its dead ends.
STATUS_COLOURS: dict[str, str] = {
    S.ACCEPTED: "#9db4c8",
    S.AWAITING_TRANSFER: "#2f8fcf",
    S.TICKET_RECEIVED: "#0f5f8f",
    S.PAYOUT_IN_PROCESS: "#6a4fb3",
    S.SCHEDULED: "#a77bd6",
    S.PAID: "#1a7f37",
    S.EXPIRED: "#d9a400",
    S.CANCELED: "#b42318",
}


@dataclass(frozen=True)
class PeriodFigures:
    label: str
    orders: int
    tickets: int  # of the orders that were not canceled
    bought: Decimal
    charged: Decimal
    refunded: Decimal
    paid_out: Decimal


@dataclass(frozen=True)
class Queue:
    label: str
    help: str
    count: int
    url: str

    @property
    def needs_attention(self) -> bool:
        return self.count > 0


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str


@dataclass
class Chart:
    title: str
    width: int
    height: int
    bars: list[Bar] = field(default_factory=list)
    labels: list[tuple[float, str, str]] = field(default_factory=list)  # (x, anchor, text) under the axis
    maximum: str = ""
    legend: list[tuple[str, str]] = field(default_factory=list)  # (colour, label)
    empty: bool = True


@dataclass(frozen=True)
class Dashboard:
    periods: list[PeriodFigures]
    queues: list[Queue]
    transfer_cases: list[Queue]  # the "Transfers" tile: open cases by kind
    orders_chart: Chart
    payouts_chart: Chart
    generated_at: datetime


def _start_of_day(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _period(label: str, start: datetime, end: datetime) -> PeriodFigures:
    return PeriodFigures(label, **asdict(money_figures(start=start, end=end)))


def _changelist(name: str, **params: str) -> str:
    return reverse(f"admin:{name}_changelist") + ("?" + urlencode(params) if params else "")


def _transfer_deadlines(*, now: datetime) -> dict[str, int]:
    """Live orders awaiting transfer due soon and overdue (``orders.selectors.transfer_deadline``: the venue's
    date): one grouped query (an in-hand date per time zone)."""
    groups = (
        awaiting_transfer_by_deadline(now=now)
        .live()
        .order_by()
        .values_list("event__timezone", "in_hand_date")
        .annotate(n=Count("id"))
    )
    counts = {DUE_SOON: 0, OVERDUE: 0}
    for zone, in_hand, n in groups:
        deadline = transfer_deadline(in_hand=in_hand, zone=zone, now=now)
        if deadline is not None:
            counts[deadline] += n
    return counts


def _queues(*, today: date, now: datetime | None = None) -> list[Queue]:
    counts = _transfer_deadlines(now=now or _start_of_day(today) + timedelta(hours=12))
    declined = Charge.objects.filter(status=Charge.Status.FAILED).count()
    failed_refunds = Charge.objects.filter(refund_status=Charge.RefundStatus.FAILED).count()
    failed_payouts = Payout.objects.filter(status=Payout.Status.FAILED).count()
    open_disputes = Dispute.objects.filter(status=Dispute.Status.OPEN).count()
    disabled_endpoints = WebhookEndpoint.objects.live().filter(status=WebhookEndpoint.Status.DISABLED).count()
    return [
        Queue(
            "Transfer cases",
            "Transfers the service could not decide alone (forged or unverifiable mail, mismatches, recalls): "
            "resolve them with a reason.",
            _open_cases().count(),
            _changelist("transfers_transfercase", state="unresolved"),
        ),
        Queue(
            "Transfers due within 48 hours",
            "Awaiting transfer, in-hand date today or in the next two days at the venue: chase the seller.",
            counts[DUE_SOON],
            _changelist("orders_order", transfer_deadline=DUE_SOON),
        ),
        Queue(
            "Overdue transfers",
            "Still awaiting transfer after the in-hand date at the venue: the expiry run will expire them.",
            counts[OVERDUE],
            _changelist("orders_order", transfer_deadline=OVERDUE),
        ),
        Queue(
            "Declined charges",
            "Cards that declined: the partner must update its card.",
            declined,
            _changelist("payouts_charge", status__exact=Charge.Status.FAILED),
        ),
        Queue(
            "Failed refunds",
            "Refunds the platform refused: retry them from the charge.",
            failed_refunds,
            _changelist("payouts_charge", refund_status__exact=Charge.RefundStatus.FAILED),
        ),
        Queue(
            "Failed payouts",
            "Payouts the platform refused: check the account and retry.",
            failed_payouts,
            _changelist("payouts_payout", status__exact=Payout.Status.FAILED),
        ),
        Queue(
            "Open disputes",
            "Card charges the partner's bank disputes: answer with the evidence in the payment platform's "
            "dashboard before the due date; the platform's verdict closes the case.",
            open_disputes,
            _changelist("payouts_dispute", status__exact=Dispute.Status.OPEN),
        ),
        Queue(
            "Disabled webhook endpoints",
            "Endpoints the partner disabled, that answered 410 Gone or failed for 3 days: their partner gets no "
            "webhooks until the endpoint is enabled again.",
            disabled_endpoints,
            _changelist("webhooks_webhookendpoint", status__exact=WebhookEndpoint.Status.DISABLED),
        ),
    ]


def _open_cases():
    """Open or in-review cases of live orders (a case without an order counts: someone must see it)."""
    return TransferCase.objects.filter(state__in=TransferCase.OPEN_STATES).filter(
        Q(order__livemode=True) | Q(order__isnull=True)
    )


def _transfer_cases() -> list[Queue]:
    """The "Transfers" tile: open cases by kind, each linking to the queue filtered on its kind."""
    counts = dict(_open_cases().order_by().values_list("kind").annotate(n=Count("id")))
    return [
        Queue(
            str(label),
            "",
            counts[kind],
            _changelist("transfers_transfercase", state="unresolved", kind__exact=kind),
        )
        for kind, label in TransferCase.Kind.choices
        if counts.get(kind)
    ]


def _label(i: int, count: int, slot: float, text: str) -> tuple[float, str, str]:
    """An axis label under slot ``i``; the first and last are anchored inwards so they are never cut off."""
    if i == 0:
        return (0.0, "start", text)
    if i == count - 1:
        return (count * slot, "end", text)
    return (i * slot + slot / 2, "middle", text)


def _orders_chart(*, today: date) -> Chart:
    first = today - timedelta(days=CHART_DAYS - 1)
    rows = (
        Order.objects.live()
        .filter(created_at__gte=_start_of_day(first))
        .annotate(day=TruncDate("created_at"))
        .values("day", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    per_day: dict[date, dict[str, int]] = {}
    for row in rows:
        per_day.setdefault(row["day"], {})[row["status"]] = row["n"]
    days = [first + timedelta(days=i) for i in range(CHART_DAYS)]
    peak = max((sum(per_day.get(d, {}).values()) for d in days), default=0)
    chart = Chart("Orders per day, by status (30 days)", width=720, height=220, maximum=str(peak))
    chart.legend = [(colour, S(status).label) for status, colour in STATUS_COLOURS.items()]
    plot_h, slot = 190.0, 720 / CHART_DAYS
    for i, day in enumerate(days):
        y = plot_h
        for status, colour in STATUS_COLOURS.items():
            n = per_day.get(day, {}).get(status, 0)
            if not n:
                continue
            h = plot_h * n / peak
            y -= h
            chart.bars.append(
                Bar(
                    i * slot + 2,
                    round(y, 2),
                    slot - 4,
                    round(h, 2),
                    colour,
                    f"{day:%b %d}: {n} {S(status).label}",
                )
            )
        if i % 5 == 0 or i == CHART_DAYS - 1:
            chart.labels.append(_label(i, CHART_DAYS, slot, f"{day:%b %d}"))
    chart.empty = peak == 0
    return chart


def _payouts_chart(*, today: date) -> Chart:
    monday = today - timedelta(days=today.weekday())
    first = monday - timedelta(weeks=CHART_WEEKS - 1)
    totals = {
        row["day"]: row["total"]
        for row in Payout.objects.filter(status=Payout.Status.PAID, paid_at__gte=_start_of_day(first))
        .annotate(day=TruncDate("paid_at"))
        .values("day")
        .annotate(total=Sum("amount"))
        .order_by()
    }
    weeks = [first + timedelta(weeks=i) for i in range(CHART_WEEKS)]
    per_week = {w: Decimal("0") for w in weeks}
    for day, total in totals.items():
        per_week[day - timedelta(days=day.weekday())] += total or 0
    peak = max(per_week.values(), default=Decimal("0"))
    chart = Chart("Paid out per week, USD (12 weeks)", width=720, height=220, maximum=f"${peak:,.2f}")
    plot_h, slot = 190.0, 720 / CHART_WEEKS
    for i, week in enumerate(weeks):
        amount = per_week[week]
        if amount:
            h = float(plot_h * float(amount) / float(peak))
            chart.bars.append(
                Bar(
                    i * slot + 6,
                    round(plot_h - h, 2),
                    slot - 12,
                    round(h, 2),
                    "#1a7f37",
                    f"Week of {week:%b %d}: ${amount:,.2f}",
                )
            )
        if i % 2 == 0 or i == CHART_WEEKS - 1:
            chart.labels.append(_label(i, CHART_WEEKS, slot, f"{week:%b %d}"))
    chart.empty = peak == 0
    return chart


def staff_dashboard(*, now: datetime | None = None) -> Dashboard:
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    day_start = _start_of_day(today)
    week_start = _start_of_day(today - timedelta(days=today.weekday()))
    return Dashboard(
        periods=[
            _period("Today", day_start, day_start + timedelta(days=1)),
            _period("This week", week_start, week_start + timedelta(days=7)),
        ],
        queues=_queues(today=today, now=now),
        transfer_cases=_transfer_cases(),
        orders_chart=_orders_chart(today=today),
        payouts_chart=_payouts_chart(today=today),
        generated_at=now,
    )
