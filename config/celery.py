"""Celery application: ``celery -A config worker`` and ``celery -A config beat``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Webhook deliveries wait on partners' servers (up to the 10 s timeout each): their own queue, so a slow
# endpoint never delays an order confirmation. The Procfile runs a second worker for it (`-Q webhooks`).
app.conf.task_routes = {"orders.webhooks.tasks.*": {"queue": "webhooks"}}
