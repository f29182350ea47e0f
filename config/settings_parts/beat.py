"""The periodic work (``CELERY_BEAT_SCHEDULE``): run by ``celery -A config beat`` in production and by the web
process itself in the embedded default (config/deploy/scheduler.py). Intervals in seconds."""


def beat_schedule(*, payouts_progress_seconds: float) -> dict[str, dict]:
    return {
        "partners-publish-token-revocations": {
            "task": "partners.tasks.publish_token_revocations",
            "schedule": 60.0,
        },
        "quotes-purge-expired": {"task": "quotes.tasks.purge_expired_quotes", "schedule": 3600.0},
        "payouts-sweep-unconfirmed": {"task": "payouts.tasks.sweep_unconfirmed_orders", "schedule": 30.0},
        "orders-dispatch-notifications": {
            "task": "orders.tasks.dispatch_pending_notifications",
            "schedule": 30.0,
        },
        "orders-purge-notifications": {"task": "orders.tasks.purge_notifications", "schedule": 3600.0},
        "orders-expire-overdue": {"task": "orders.tasks.expire_overdue_orders", "schedule": 300.0},
        "payouts-progress": {
            "task": "payouts.tasks.progress_payouts",
            "schedule": payouts_progress_seconds,
        },
        "idempotency-purge-expired": {
            "task": "partners.idempotency.tasks.purge_expired_idempotency_keys",
            "schedule": 3600.0,
        },
        # Sends webhook attempts that are due but whose Celery message was lost (the row is the truth).
        "webhooks-send-due": {"task": "orders.webhooks.tasks.send_due_deliveries", "schedule": 30.0},
        "webhooks-purge-old": {"task": "orders.webhooks.tasks.purge_old_deliveries", "schedule": 3600.0},
    }
