"""The staff dashboard on the admin's index: every figure against a known data set, and the queues' links."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from orders.models import Order
from orders.transfers.decision.state import case_move, case_open
from orders.webhooks.models import WebhookEndpoint
from payouts.backoffice.dashboard import staff_dashboard
from payouts.models import Charge, Dispute, Payout
from tests.orders.factories import make_order

NOW = datetime(2026, 11, 18, 15, 0, tzinfo=UTC)  # a Wednesday
TODAY = NOW.date()
MONDAY = date(2026, 11, 16)

# The data set is a week of known days: the service's clock is on that Wednesday too.
pytestmark = pytest.mark.travel(NOW)


def _at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def _order(
    partner, *, status: str, created: datetime, quantity: int, price: str, in_hand: date | None = None
):
    order = make_order(partner, status=status, quantity=quantity, offer_price=Decimal(price))
    values = {"created_at": created}
    if in_hand is not None:
        values["in_hand_date"] = in_hand
    Order.objects.filter(pk=order.pk).update(**values)
    order.refresh_from_db()
    return order


def _charge(
    order, *, status: str, created: datetime, refund_status: str = "none", refunded_at=None
) -> Charge:
    charge = Charge.objects.create(
        order=order,
        partner=order.partner,
        amount=order.total_price,
        platform="sandbox",
        idempotency_key=f"test-{order.order_id}",
        status=status,
        refund_status=refund_status,
        refunded_at=refunded_at,
    )
    Charge.objects.filter(pk=charge.pk).update(created_at=created)
    return charge


def _payout(order, *, status: str, paid_at=None) -> Payout:
    return Payout.objects.create(
        order=order, partner=order.partner, amount=order.total_price, status=status, paid_at=paid_at
    )


def _endpoint(partner, *, status: str, disabled_reason: str = "") -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        partner=partner,
        url="https://hooks.acme.example/tickets",
        event_types=["*"],
        status=status,
        disabled_reason=disabled_reason,
        secret_encrypted="not-used-here",
    )


@pytest.fixture
def data_set(partner):
    today_paid = _order(partner, status="paid", created=_at(TODAY, 9), quantity=2, price="50.00")  # 100
    today_open = _order(
        partner, status="awaiting_transfer", created=_at(TODAY, 10), quantity=1, price="30.00", in_hand=TODAY
    )  # 30, due today
    today_canceled = _order(
        partner, status="canceled", created=_at(TODAY, 11), quantity=4, price="10.00"
    )  # 40
    monday = _order(
        partner,
        status="awaiting_transfer",
        created=_at(MONDAY, 8),
        quantity=3,
        price="20.00",
        in_hand=TODAY - timedelta(days=1),
    )  # 60, overdue
    last_week = _order(
        partner, status="ticket_received", created=_at(MONDAY - timedelta(days=2)), quantity=5, price="11.00"
    )

    _charge(today_paid, status="succeeded", created=_at(TODAY, 9))
    disputed = _charge(today_open, status="succeeded", created=_at(TODAY, 10))
    _charge(
        today_canceled,
        status="succeeded",
        created=_at(TODAY, 11),
        refund_status="succeeded",
        refunded_at=_at(TODAY, 12),
    )
    _charge(monday, status="failed", created=_at(MONDAY, 8))
    _charge(last_week, status="succeeded", created=_at(MONDAY - timedelta(days=2)), refund_status="failed")
    _payout(today_paid, status="paid", paid_at=_at(TODAY, 13))
    _payout(last_week, status="failed")
    _endpoint(partner, status="enabled")
    gone = _endpoint(partner, status="disabled", disabled_reason="endpoint_gone")
    # One open transfer case (a live order), and one already resolved, which needs nobody.
    case_open(order=monday, kind="partial_overdue", summary="Half the seats, the in-hand date is near.")
    done = case_open(order=last_week, kind="mismatch", summary="Row differs.")
    case_move(case=done, to="resolved", actor="staff:test", reason="asked", resolution="asked_seller")
    # One open card dispute (the partner's bank disputes today's open order's charge), one closed.
    for dispute_id, status in (("dp_open", "open"), ("dp_closed", "closed")):
        Dispute.objects.create(
            charge=disputed,
            order=today_open,
            partner=partner,
            platform_dispute_id=dispute_id,
            amount=disputed.amount,
            reason="fraudulent",
            status=status,
        )
    return {"today_paid": today_paid, "today_open": today_open, "monday": monday, "gone_endpoint": gone}


@pytest.mark.django_db
def test_today_and_this_week_figures(data_set):
    dashboard = staff_dashboard(now=NOW)
    today, week = dashboard.periods
    # The canceled order counts as an order, but its tickets and money were not bought.
    assert (today.label, today.orders, today.tickets) == ("Today", 3, 3)
    assert today.bought == Decimal("130.00")  # the canceled order bought nothing
    assert today.charged == Decimal("170.00")
    assert today.refunded == Decimal("40.00")
    assert today.paid_out == Decimal("100.00")
    assert (week.label, week.orders, week.tickets) == ("This week", 4, 6)
    assert week.bought == Decimal("190.00")
    assert week.charged == Decimal("170.00")  # the declined charge is not money charged
    assert week.paid_out == Decimal("100.00")


@pytest.mark.django_db
def test_queues_count_what_needs_doing(data_set):
    queues = {q.label: q.count for q in staff_dashboard(now=NOW).queues}
    assert queues == {
        "Transfer cases": 1,
        "Transfers due within 48 hours": 1,
        "Overdue transfers": 1,
        "Declined charges": 1,
        "Failed refunds": 1,
        "Failed payouts": 1,
        "Open disputes": 1,
        "Disabled webhook endpoints": 1,
    }


@pytest.mark.django_db
def test_the_transfers_tile_counts_open_cases_by_kind_and_links_the_filtered_queue(data_set):
    tile = staff_dashboard(now=NOW).transfer_cases
    assert [(q.label, q.count) for q in tile] == [("Partial, in-hand date near", 1)]
    assert tile[0].url == "/admin/transfers/transfercase/?state=unresolved&kind__exact=partial_overdue"


@pytest.mark.django_db
def test_orders_chart_stacks_each_day_by_status(data_set):
    chart = staff_dashboard(now=NOW).orders_chart
    assert not chart.empty and chart.maximum == "3"
    titles = sorted(bar.title for bar in chart.bars)
    assert titles == sorted(
        [
            "Nov 18: 1 Paid",
            "Nov 18: 1 Awaiting transfer",
            "Nov 18: 1 Canceled",
            "Nov 16: 1 Awaiting transfer",
            "Nov 14: 1 Ticket received",
        ]
    )
    # Today's column is full height: three orders of the peak of three.
    today_bars = [b for b in chart.bars if b.title.startswith("Nov 18")]
    assert round(sum(b.height for b in today_bars)) == 190


@pytest.mark.django_db
def test_payouts_chart_sums_paid_amounts_per_week(data_set):
    chart = staff_dashboard(now=NOW).payouts_chart
    assert [b.title for b in chart.bars] == ["Week of Nov 16: $100.00"]
    assert chart.maximum == "$100.00"


@pytest.mark.django_db
def test_an_empty_business_shows_zeroes_and_empty_charts():
    dashboard = staff_dashboard(now=NOW)
    assert all(p.orders == 0 and p.bought == 0 for p in dashboard.periods)
    assert dashboard.orders_chart.empty and dashboard.payouts_chart.empty
    assert all(q.count == 0 for q in dashboard.queues)


@pytest.fixture
def staff_client(db) -> Client:
    user = get_user_model().objects.create_superuser(
        "boss@service.example", "boss@service.example", "pw-123456"
    )
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_admin_index_shows_the_dashboard_and_queue_links_open_filtered_lists(
    staff_client, data_set, time_machine
):
    time_machine.move_to(NOW, tick=False)
    response = staff_client.get("/admin/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="staff-dashboard"' in html
    assert "<svg" in html
    dashboard = staff_dashboard(now=NOW)
    expected = {
        "Overdue transfers": {data_set["monday"].order_id},
        "Transfer cases": {data_set["monday"].order_id},
        "Declined charges": {data_set["monday"].order_id},
        "Failed payouts": {Order.objects.get(status="ticket_received").order_id},
        "Open disputes": {data_set["today_open"].order_id},
        "Disabled webhook endpoints": {data_set["gone_endpoint"].endpoint_id},
    }
    for queue in dashboard.queues:
        assert queue.url in html.replace("&amp;", "&")
        listed = staff_client.get(queue.url)
        assert listed.status_code == 200, queue.url
        # The filter took: Django's admin redirects to ?e=1 when it ignores a parameter.
        assert "?e=1" not in listed.get("Location", "")
        assert f"{queue.count} result" in listed.content.decode() or (
            queue.count == 1 and "1 result" in listed.content.decode()
        ), queue.label
        for order_id in expected.get(queue.label, set()):
            assert order_id in listed.content.decode()


@pytest.mark.django_db
def test_staff_without_order_access_see_no_business_figures(db):
    user = get_user_model().objects.create_user("clerk", "clerk@service.example", "pw-123456", is_staff=True)
    client = Client()
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 200
    assert 'data-testid="staff-dashboard"' not in response.content.decode()


def test_the_transfer_queues_read_each_venue_zone_once_however_many_zones():
    """The queues' count looks up a venue's zone per (zone, in-hand date) group: over more zones than ZoneInfo keeps
    for sure (eight), each zone's file is read once, not once a group."""
    from orders import selectors

    zones = [
        "Europe/Lisbon", "Europe/Paris", "Europe/Berlin", "Europe/Athens", "America/New_York", "America/Chicago",
        "America/Denver", "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney", "Africa/Lagos", "Pacific/Auckland",
    ]  # fmt: skip
    now = datetime.now(UTC)
    selectors._zone.cache_clear()
    expected = {}
    for _ in range(3):
        for n, zone in enumerate(zones):
            in_hand = (now + timedelta(days=n % 4 - 1)).date()
            found = selectors.transfer_deadline(in_hand=in_hand, zone=zone, now=now)
            assert expected.setdefault((zone, in_hand), found) == found
    assert selectors._zone.cache_info().misses == len(zones)
    assert selectors._zone(zones[0]) is selectors._zone(zones[0])
