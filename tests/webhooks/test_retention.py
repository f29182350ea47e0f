"""Deliveries and their attempts are kept 30 days, then purged by beat in batches."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from orders.webhooks import services, tasks
from orders.webhooks.models import WebhookAttempt, WebhookDelivery

from .conftest import order_notification, register

pytestmark = pytest.mark.django_db


def test_deliveries_older_than_30_days_are_purged_with_their_attempts(
    partner, receiver, django_capture_on_commit_callbacks
):
    register(partner, receiver.url())
    now = timezone.now()
    with time_machine.travel(now - timedelta(days=31)), django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):
            services.notification_fan_out(order_notification(partner))
    with time_machine.travel(now - timedelta(days=29)), django_capture_on_commit_callbacks(execute=True):
        [recent] = services.notification_fan_out(order_notification(partner))
    assert WebhookAttempt.objects.count() == 4

    assert services.deliveries_purge(batch_size=2) == 3
    assert list(WebhookDelivery.objects.values_list("pk", flat=True)) == [recent.pk]
    assert list(WebhookAttempt.objects.values_list("delivery_id", flat=True)) == [recent.pk]
    assert tasks.deliveries_purge() == 0


def test_the_sweep_and_the_purge_run_on_beat(settings):
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {
        "orders.webhooks.tasks.deliveries_send_due",
        "orders.webhooks.tasks.deliveries_purge",
    } <= scheduled
