"""Celery application: ``celery -A config worker`` and ``celery -A config beat``."""

import os

from celery import Celery
from kombu import Queue

from config.deploy import worker_db

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
# The app of every thread of the process, not only of the one that imported it: code that publishes by task name
# (config/core/publish.py) reads it as ``celery.current_app`` rather than importing this module.
app.set_default()
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Webhook attempts wait on partners' servers (up to 15 s each): their own queues, so a slow endpoint never
# delays an order confirmation. ``webhooks`` carries the attempts to endpoints in good standing,
# ``webhooks_slow`` those to endpoints whose last attempt timed out; the Procfile runs a worker for each.
# The webhooks' sweep, purge and e-mail stay on the default queue: slow deliveries never starve them.
# The queue names can be changed (several deployments on one Redis; the tests' own workers).
# TASK_QUEUE renames the default queue (everything but the webhook attempts) the same way.
TASK_QUEUE = os.environ.get("TASK_QUEUE", "celery")
WEBHOOK_QUEUE = os.environ.get("WEBHOOK_QUEUE", "webhooks")
WEBHOOK_SLOW_QUEUE = os.environ.get("WEBHOOK_SLOW_QUEUE", "webhooks_slow")
app.conf.task_routes = {
    "orders.webhooks.tasks.delivery_attempt": {"queue": WEBHOOK_QUEUE},
    "orders.webhooks.tasks.delivery_attempt_slow": {"queue": WEBHOOK_SLOW_QUEUE},
}
# Every queue the service uses, declared: a worker started without ``-Q`` (``celery -A config worker``)
# consumes all of them, so one plain worker runs everything; ``-Q`` splits them over workers.
QUEUES = (TASK_QUEUE, WEBHOOK_QUEUE, WEBHOOK_SLOW_QUEUE)
app.conf.task_default_queue = TASK_QUEUE
app.conf.task_queues = tuple(Queue(name, routing_key=name) for name in QUEUES)

# Each task's database connections go back to the process's pool, which is kept (config/deploy/worker_db.py).
worker_db.install(app)
