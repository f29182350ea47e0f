"""Indexes that only repeated the leading column of another, and pattern indexes no query uses, dropped: every
order, move, history row, notification and receipt wrote them. A lookup by the partner, the order or the
notification is answered by the index that leads with it; the ids and transfer addresses are only ever matched
whole, by their unique indexes."""

import django.db.models.deletion
from django.db import migrations, models


def _drop(name: str, table: str, column: str, opclass: str = "") -> migrations.RunSQL:
    """Drop an index without locking out writes; the reverse builds it again the same way."""
    return migrations.RunSQL(
        f"DROP INDEX CONCURRENTLY IF EXISTS {name}",
        reverse_sql=f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} ({column}{opclass})",
    )


class Migration(migrations.Migration):
    # The tables are large and in use while the release runs.
    atomic = False

    dependencies = [
        ("orders", "0012_active_orders_index"),
        ("partners", "0007_token_sessions_in_redis"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="notification",
                    name="order",
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name="notifications", to="orders.order"),
                ),
                migrations.AlterField(
                    model_name="notification",
                    name="partner",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="notifications", to="partners.partner"),
                ),
                migrations.AlterField(
                    model_name="notificationreceipt",
                    name="notification",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="receipts", to="orders.notification"),
                ),
                migrations.AlterField(
                    model_name="order",
                    name="partner",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="orders", to="partners.partner"),
                ),
                migrations.AlterField(
                    model_name="orderstatushistory",
                    name="order",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="status_history", to="orders.order"),
                ),
            ],
            database_operations=[
                _drop("orders_notification_order_id_31905076", "orders_notification", "order_id"),
                _drop("orders_notification_partner_id_3763e5e3", "orders_notification", "partner_id"),
                _drop("orders_notificationreceipt_notification_id_9191280b", "orders_notificationreceipt", "notification_id"),
                _drop("orders_order_partner_id_9b0056be", "orders_order", "partner_id"),
                _drop("orders_orderstatushistory_order_id_bf09a0e1", "orders_orderstatushistory", "order_id"),
            ],
        ),
        _drop("orders_order_order_id_03d11293_like", "orders_order", "order_id", " varchar_pattern_ops"),
        _drop("orders_order_transfer_address_3433d6f7_like", "orders_order", "transfer_address", " varchar_pattern_ops"),
        _drop("orders_notification_notification_id_05dcf98e_like", "orders_notification", "notification_id", " varchar_pattern_ops"),
    ]
