"""Celery application: ``celery -A config worker`` and ``celery -A config beat``."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Every queue the service uses. A worker started without ``-Q`` (``celery -A config worker``) consumes all
# of them, so one plain worker runs everything; ``-Q`` splits them over workers.
QUEUES = ("celery", "webhooks")
app.conf.task_default_queue = "celery"
app.conf.task_queues = tuple(Queue(name, routing_key=name) for name in QUEUES)
# Webhook deliveries wait on partners' servers (up to the 10 s timeout each): their own queue, so that a
# deployment can give them a worker of their own (the Procfile's `webhooks` line, `-Q webhooks`) and a slow
# endpoint never delays an order confirmation.
app.conf.task_routes = {"orders.webhooks.tasks.*": {"queue": "webhooks"}}
