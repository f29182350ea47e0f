"""The charge's partner index dropped (charge_partner_created leads with it), and the idempotency key's pattern
index, which no query uses (the key is only matched whole, by its unique index): every charge wrote them."""

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
        ("partners", "0007_token_sessions_in_redis"),
        ("payouts", "0022_sweep_mark"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="charge",
                    name="partner",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="charges", to="partners.partner"),
                ),
            ],
            database_operations=[
                _drop("payouts_charge_partner_id_df186994", "payouts_charge", "partner_id"),
            ],
        ),
        _drop("payouts_charge_idempotency_key_aa5edeeb_like", "payouts_charge", "idempotency_key", " varchar_pattern_ops"),
    ]
