"""Staff lists of the tables that grow without bound (orders, notifications, charges, payouts, webhook
deliveries): searches read through indexes, no date hierarchy's DISTINCT over every row, and a long list shows the
planner's estimate instead of counting its rows."""

import pytest

from config.core import admin_scale
from orders.models import Order
from tests.orders.conftest import create_order

from .plans import on_table, plan_without_seq_scans, statements_of

pytestmark = pytest.mark.django_db

ORDERS = "/admin/orders/order/"
LISTS = [
    (ORDERS, "orders_order"),
    ("/admin/orders/notification/", "orders_notification"),
    ("/admin/payouts/charge/", "payouts_charge"),
    ("/admin/payouts/payout/", "payouts_payout"),
    ("/admin/webhooks/webhookdelivery/", "webhooks_webhookdelivery"),
]


def list_statement(statements: list[str], table: str) -> str:
    """The statement that read the list's rows (short lists are read without a LIMIT)."""
    [listed] = [
        sql
        for sql in on_table(statements, table)
        if f'FROM "{table}"' in sql.split(" WHERE ")[0] and "ORDER BY" in sql and "COUNT(" not in sql
    ]
    return listed


def test_an_order_id_finds_its_order_through_the_index_alone(staff_client, partner):
    wanted, other = create_order(partner), create_order(partner)
    response, statements = statements_of(lambda: staff_client.get(ORDERS, {"q": wanted.order_id}))
    content = response.content.decode()
    assert wanted.order_id in content and other.order_id not in content
    orders = on_table(statements, "orders_order")
    # Neither a fragment matched across joins nor the date hierarchy's DISTINCT over every row.
    assert not [sql for sql in orders if "LIKE" in sql or "DISTINCT" in sql or "DATE_TRUNC" in sql]
    assert "Seq Scan on orders_order" not in plan_without_seq_scans(
        list_statement(statements, "orders_order")
    )


@pytest.mark.parametrize("field", ["partner_reference", "seller_email", "transfer_address"])
def test_what_staff_paste_is_matched_whole_through_an_index(staff_client, partner, field):
    wanted = create_order(partner)
    other = create_order(partner)
    Order.objects.filter(pk=wanted.pk).update(
        partner_reference="REF-77", seller_email="Sam.Seller@Example.com"
    )
    wanted.refresh_from_db()
    term = {"seller_email": "sam.seller@example.COM"}.get(field, getattr(wanted, field))
    response, statements = statements_of(lambda: staff_client.get(ORDERS, {"q": term}))
    content = response.content.decode()
    assert wanted.order_id in content and other.order_id not in content
    assert "Seq Scan on orders_order" not in plan_without_seq_scans(
        list_statement(statements, "orders_order")
    )


def test_a_fragment_of_a_name_finds_a_partners_orders_through_the_partners_table(staff_client, partner):
    order = create_order(partner)
    response, statements = statements_of(lambda: staff_client.get(ORDERS, {"q": partner.name[2:8]}))
    assert order.order_id in response.content.decode()
    assert not [sql for sql in on_table(statements, "orders_order") if "LIKE" in sql]


@pytest.mark.parametrize("url,table", LISTS)
def test_a_long_list_shows_an_estimate_and_never_counts_or_walks_every_row(
    staff_client, partner, monkeypatch, url, table
):
    order = create_order(partner)
    short = staff_client.get(url).content.decode()
    assert "estimated-count" not in short  # a short list is counted exactly
    monkeypatch.setattr(admin_scale, "EXACT_COUNT_BELOW", 0)  # every list is long
    response, statements = statements_of(lambda: staff_client.get(url))
    assert response.status_code == 200
    content = response.content.decode()
    assert 'class="estimated-count"' in content and "about " in content
    # No count, no date hierarchy, no list filter listing the values of every row.
    assert not [sql for sql in on_table(statements, table) if "COUNT(" in sql or "DISTINCT" in sql]
    if table == "orders_order":
        assert order.order_id in content


def test_the_payouts_list_newest_first_reads_its_index(staff_client):
    _, statements = statements_of(lambda: staff_client.get("/admin/payouts/payout/"))
    # A page of a long list (LIMIT) is read in the index's order, not sorted.
    plan = plan_without_seq_scans(list_statement(statements, "payouts_payout") + " LIMIT 1")
    assert "payout_newest" in plan and "Sort" not in plan
