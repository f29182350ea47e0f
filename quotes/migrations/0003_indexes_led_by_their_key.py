"""The quote's partner and row indexes dropped: quote_partner_created and quote_row_consumed lead with them, and
every quote wrote both."""

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
        ("catalog", "0005_staff_action_permissions"),
        ("partners", "0007_token_sessions_in_redis"),
        ("quotes", "0002_quote_livemode"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="quote",
                    name="partner",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="quotes", to="partners.partner"),
                ),
                migrations.AlterField(
                    model_name="quote",
                    name="row",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="quotes", to="catalog.row"),
                ),
            ],
            database_operations=[
                _drop("quotes_quote_partner_id_7e083705", "quotes_quote", "partner_id"),
                _drop("quotes_quote_row_id_279ec705", "quotes_quote", "row_id"),
            ],
        ),
    ]
