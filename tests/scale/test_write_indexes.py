"""Every order, quote, charge, status move, notification and receipt writes each index of its table: the tables
that take a row (or a row's new version) with every order carry no index that another already answers."""

import pytest
from django.db import connection

from orders.models import Notification, Order
from payouts.models import Charge
from quotes.models import Quote

from .plans import plan_without_seq_scans

pytestmark = pytest.mark.django_db

WRITTEN_WITH_EVERY_ORDER = (
    "orders_order",
    "orders_orderstatushistory",
    "orders_notification",
    "orders_notificationreceipt",
    "quotes_quote",
    "payouts_charge",
)


def _indexes(table: str) -> list[dict]:
    """Each index of ``table``: its name, its columns in order, whether it is unique, partial or on an
    expression, and its operator classes."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.relname,
                   array(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY k(attnum, n)
                         JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n),
                   x.indisunique, x.indpred IS NOT NULL, x.indexprs IS NOT NULL,
                   array(SELECT o.opcname FROM unnest(x.indclass) c(oid) JOIN pg_opclass o ON o.oid = c.oid)
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            WHERE t.relname = %s
            """,
            [table],
        )
        return [
            {
                "name": r[0],
                "columns": r[1],
                "unique": r[2],
                "partial": r[3],
                "expression": r[4],
                "opclasses": r[5],
            }
            for r in cursor.fetchall()
        ]


@pytest.mark.parametrize("table", WRITTEN_WITH_EVERY_ORDER)
def test_no_index_only_repeats_the_leading_columns_of_another(table):
    indexes = _indexes(table)
    assert indexes
    plain = [i for i in indexes if not i["partial"] and not i["expression"]]
    repeated = [
        (index["name"], other["name"])
        for index in plain
        if not index["unique"]
        for other in plain
        if other is not index and other["columns"][: len(index["columns"])] == index["columns"]
    ]
    assert repeated == [], f"{table}: each index of the first name is answered by the second"


@pytest.mark.parametrize("table", WRITTEN_WITH_EVERY_ORDER)
def test_no_pattern_index_that_no_query_uses(table):
    # The ids, transfer addresses and idempotency keys are matched whole, by their unique indexes; a LIKE prefix
    # search, which a pattern index serves, is made on none of them.
    patterns = [i["name"] for i in _indexes(table) if any(o.endswith("_pattern_ops") for o in i["opclasses"])]
    assert patterns == []


@pytest.mark.parametrize(
    ("queryset", "index"),
    [
        # A partner's orders, notifications and charges, and a row's quotes: the indexes that lead with the key.
        (lambda: Order.objects.filter(partner_id=1), "order_partner_"),
        (lambda: Notification.objects.filter(partner_id=1), "ntf_partner_feed"),
        (lambda: Notification.objects.filter(order_id=1), "ntf_order"),
        (lambda: Charge.objects.filter(partner_id=1), "charge_partner_created"),
        (lambda: Quote.objects.filter(row_id=1), "quote_row_consumed"),
        (lambda: Quote.objects.filter(partner_id=1), "quote_partner_created"),
        # Found whole by staff and the mail receiver.
        (lambda: Order.objects.filter(order_id="ord_x"), "orders_order_order_id_key"),
        (lambda: Order.objects.filter(transfer_address="x@in.example"), "orders_order_transfer_address_key"),
        (lambda: Charge.objects.filter(idempotency_key="k"), "payouts_charge_idempotency_key_key"),
    ],
)
def test_a_lookup_by_each_dropped_indexs_key_still_reads_an_index(queryset, index):
    sql, params = queryset().order_by().values_list("pk", flat=True).query.sql_with_params()
    plan = plan_without_seq_scans(sql, params)
    assert "Seq Scan" not in plan and index in plan, plan
