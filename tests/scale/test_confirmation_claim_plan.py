"""A confirmation batch claims the waiting orders from their own index, in its order: an index scan that, after its
first visit, skips the entries of orders that moved on since the last vacuum (a bitmap scan of the open orders'
index read all of them again on every claim, a cost that grew with every order confirmed until the table was
vacuumed)."""

import pytest
from django.db import connection, transaction
from django.utils import timezone

from payouts.lifecycle import confirmation
from tests.orders.factories import make_orders

from .plans import plan_without_seq_scans, statements_of

pytestmark = pytest.mark.django_db


def _claim_statement() -> str:
    with transaction.atomic():
        _, statements = statements_of(
            lambda: confirmation.orders_confirmation_claim(
                limit=confirmation.settings.ORDER_CONFIRMATION_BATCH, now=timezone.now()
            )
        )
        transaction.set_rollback(True)
    (claim,) = [sql for sql in statements if sql.startswith("SELECT") and "FOR UPDATE" in sql]
    return claim


def _plan_without_bitmaps(sql: str) -> str:
    """A test's few rows make any index about as cheap as any other: bitmap scans are left out as sequential
    scans are, so that the planner chooses between the indexes by what they hold and their order."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_bitmapscan = off")
        try:
            return plan_without_seq_scans(sql)
        finally:
            cursor.execute("RESET enable_bitmapscan")


def test_the_claim_reads_the_waiting_orders_index_in_its_order(monkeypatch):
    monkeypatch.setattr(confirmation, "confirmations_nudge", lambda **_: False)
    make_orders(6)
    confirmation.orders_confirm_batch()  # these moved on: their entries stay in the indexes until a vacuum
    make_orders(3)
    plan = _plan_without_bitmaps(_claim_statement())
    assert "Index Scan using order_awaiting_confirmation on orders_order" in plan, plan
    assert "Bitmap" not in plan and "Sort Key" not in plan, plan


def test_a_full_batch_asks_for_the_orders_it_left_behind_on_the_same_index():
    make_orders(3)
    left_behind, statements = statements_of(lambda: confirmation._left_behind(timezone.now()))
    assert left_behind is True
    (check,) = [sql for sql in statements if sql.startswith("SELECT")]
    plan = _plan_without_bitmaps(check)
    assert "order_awaiting_confirmation" in plan, plan
