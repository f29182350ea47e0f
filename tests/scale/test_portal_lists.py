"""The portal's lists page by page through their index: "Older →" and "← Newer" reach every row, no page
counts them all, and a cursor the service did not sign is the first page."""

import re
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.utils import timezone

from orders.models import Order
from partners.portal.paging import PAGE_SIZE
from payouts.models import Payout, PayoutTotal
from payouts.selectors import payout_totals
from payouts.services.totals import payout_totals_compact
from tests.orders.factories import make_order
from tests.portal.exports_data import clone_orders, payout_on

from .plans import on_table, plan_without_seq_scans, statements_of

pytestmark = pytest.mark.django_db


def link(content: str, name: str) -> str | None:
    found = re.search(rf'data-testid="pager-{name}" href="([^"]+)"', content)
    return unescape(found.group(1)) if found else None


def shown_orders(content: str) -> list[str]:
    return re.findall(r'href="/portal/orders/(ord_[A-Za-z0-9]+)"', content)


def test_the_orders_pages_reach_every_order_and_count_none(ready_portal):
    clone_orders(make_order(ready_portal.partner, status="awaiting_transfer"), 2 * PAGE_SIZE + 4)
    newest_first = list(
        Order.objects.filter(partner=ready_portal.partner)
        .order_by("-created_at", "-id")
        .values_list("order_id", flat=True)
    )
    client = ready_portal.client
    pages, url, statements = [], "/portal/orders", []
    while url:
        response, ran = statements_of(
            lambda url=url: client.get("/portal/orders" + url if url.startswith("?") else url)
        )
        content = response.content.decode()
        assert response.status_code == 200
        pages.append(content)
        statements += ran
        url = link(content, "older")
    assert [len(shown_orders(page)) for page in pages] == [PAGE_SIZE, PAGE_SIZE, 5]
    assert [order for page in pages for order in shown_orders(page)] == newest_first
    assert not [sql for sql in on_table(statements, "orders_order") if "COUNT(" in sql]
    # Back from the last page: the page before it, then the first page (which has no "← Newer").
    middle = client.get("/portal/orders" + link(pages[2], "newer")).content.decode()
    assert shown_orders(middle) == shown_orders(pages[1])
    first = client.get("/portal/orders" + link(middle, "newer")).content.decode()
    assert shown_orders(first) == shown_orders(pages[0]) and link(first, "newer") is None


@pytest.mark.parametrize("cursor", ["forged.cursor", "x" * 5000, "eyJvIjpbXX0.AAAA"])
def test_a_cursor_the_service_did_not_sign_is_the_first_page(ready_portal, cursor):
    clone_orders(make_order(ready_portal.partner), PAGE_SIZE)
    first = ready_portal.client.get("/portal/orders").content.decode()
    assert "older=" in link(first, "older")
    for name in ("older", "newer"):
        response = ready_portal.client.get("/portal/orders", {name: cursor})
        assert response.status_code == 200
        assert shown_orders(response.content.decode()) == shown_orders(first)


def test_the_filters_keep_to_their_rows_page_by_page(ready_portal):
    clone_orders(make_order(ready_portal.partner, status="awaiting_transfer"), PAGE_SIZE + 1)
    paid = make_order(ready_portal.partner, status="paid")
    content = ready_portal.client.get("/portal/orders", {"status": "awaiting_transfer"}).content.decode()
    older = link(content, "older")
    assert "status=awaiting_transfer" in older
    rest = ready_portal.client.get("/portal/orders" + older).content.decode()
    assert len(shown_orders(content)) == PAGE_SIZE and len(shown_orders(rest)) == 2
    assert paid.order_id not in content + rest


def test_the_notifications_and_payouts_pages_count_nothing(ready_portal):
    clone_orders(make_order(ready_portal.partner, status="paid"), 3)
    payout_on(make_order(ready_portal.partner, status="paid"))
    for url, table in (
        ("/portal/notifications", "orders_notification"),
        ("/portal/payouts", "payouts_payout"),
    ):
        response, statements = statements_of(lambda url=url: ready_portal.client.get(url))
        assert response.status_code == 200
        assert not [sql for sql in on_table(statements, table) if "__count" in sql], (
            url
        )  # the paginator's count


def test_the_payout_totals_read_a_few_rows_whatever_the_number_of_payouts(ready_portal):
    partner = ready_portal.partner
    template = make_order(partner, status="paid")
    clone_orders(template, 60)
    orders = list(Order.objects.filter(partner=partner))
    # Payouts arrive one by one and in bulk, then move: the statements append delta rows to the totals.
    for order in orders[:10]:
        payout_on(order)
    Payout.objects.bulk_create(
        Payout(order=o, partner_id=partner.pk, amount=o.total_price, status="in_process") for o in orders[10:]
    )
    Payout.objects.filter(partner_id=partner.pk, order__in=orders[10:20]).update(status="failed")
    totals = payout_totals(partner_pk=partner.pk)
    assert (totals.paid, totals.failed) == (10 * template.total_price, 10)
    payout_totals_compact()
    # Folded: one row per status, however many payouts there are (the read at a million orders: bench/README.md
    # "Data at scale").
    assert PayoutTotal.objects.filter(partner_id=partner.pk).count() == 3
    _, [statement] = statements_of(lambda: payout_totals(partner_pk=partner.pk))
    assert re.search(
        r'FROM "payouts_payouttotal" WHERE "payouts_payouttotal"\."partner_id" = \d+ GROUP BY', statement
    )
    assert 'payouts_payout"' not in statement
    plan = plan_without_seq_scans(statement)
    assert "payout_total_partner_status" in plan and "payouts_payout " not in plan
    assert payout_totals(partner_pk=partner.pk) == totals


def test_the_day_filters_are_ranges_of_the_lists_index(ready_portal):
    today = timezone.localdate()
    month = {"created_from": (today - timedelta(days=30)).isoformat(), "created_to": today.isoformat()}
    _, statements = statements_of(lambda: ready_portal.client.get("/portal/orders", month))
    [listed] = [sql for sql in on_table(statements, "orders_order") if "ORDER BY" in sql]
    assert "::date" not in listed and "AT TIME ZONE" not in listed
    # A range of the column the list's index orders by, after the partner and the mode it starts with.
    assert re.search(r'"orders_order"\."created_at" >= .*"orders_order"\."created_at" < ', listed)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'order_partner_mode_cursor'")
        [(definition,)] = cursor.fetchall()
    assert definition.endswith("USING btree (partner_id, livemode, created_at DESC, id DESC)")
    # The last day there is is a day like any other.
    order = make_order(ready_portal.partner)
    response = ready_portal.client.get(
        "/portal/orders", {"created_from": "2000-01-01", "created_to": "9999-12-31"}
    )
    assert response.status_code == 200 and shown_orders(response.content.decode()) == [order.order_id]
    csv = ready_portal.client.get("/portal/orders.csv", {"created_to": "9999-12-31"})
    assert order.order_id.encode() in b"".join(csv.streaming_content)


def test_the_dashboards_active_orders_are_counted_from_their_own_index(ready_portal):
    """The dashboard counts the orders not settled yet from an index of those alone: the partner's settled
    history (most of a million orders) is never read to find them."""
    partner = ready_portal.partner
    clone_orders(make_order(partner, status="paid"), 40)
    clone_orders(make_order(partner, status="canceled"), 20)
    make_order(partner)
    make_order(partner, status="awaiting_transfer")
    response, statements = statements_of(lambda: ready_portal.client.get("/portal/"))
    assert response.status_code == 200
    [counted] = [sql for sql in on_table(statements, "orders_order") if sql.startswith("SELECT COUNT(*)")]
    assert "NOT (" in counted and '"orders_order"."status" IN (' in counted
    plan = plan_without_seq_scans(counted)
    assert "order_partner_active" in plan and "Seq Scan" not in plan, plan
    shown = re.search(
        r'data-testid="stat-active-orders"><div class="label">[^<]*</div><div class="value">(\d+)<',
        response.content.decode(),
    )
    assert shown and shown.group(1) == "2"
