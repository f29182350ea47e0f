"""The index of the orders waiting for their confirmation, in the order a batch claims them."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # Built without locking out writes: the orders table is large and in use while the release runs.
    atomic = False

    dependencies = [
        ("catalog", "0005_staff_action_permissions"),
        ("orders", "0013_indexes_led_by_their_key"),
        ("partners", "0007_token_sessions_in_redis"),
        ("quotes", "0003_indexes_led_by_their_key"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="order",
            index=models.Index(
                condition=models.Q(("confirmation_started_at__isnull", True), ("status", "accepted")),
                fields=["created_at", "id"],
                name="order_awaiting_confirmation",
            ),
        ),
    ]
