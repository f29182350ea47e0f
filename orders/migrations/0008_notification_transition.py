import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    # A nullable column without a constraint or an index: added without rewriting or scanning the table.

    dependencies = [
        ("orders", "0007_scale_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="notification",
            name="transition",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="orders.orderstatushistory",
            ),
        ),
    ]
