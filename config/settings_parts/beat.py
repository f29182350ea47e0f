"""The periodic work (``CELERY_BEAT_SCHEDULE``): run by ``celery -A config beat`` in production and by the web
process itself in the embedded default (config/deploy/scheduler.py). Intervals in seconds."""


def beat_schedule(*, payouts_progress_seconds: float) -> dict[str, dict]:
    return {
        "partners-publish-token-revocations": {
            "task": "partners.tasks.token_revocations_publish",
            "schedule": 60.0,
        },
        "quotes-purge-expired": {"task": "quotes.tasks.quote_purge_expired", "schedule": 3600.0},
        "payouts-sweep-unconfirmed": {"task": "payouts.tasks.orders_requeue_unconfirmed", "schedule": 30.0},
        "orders-dispatch-notifications": {
            "task": "orders.tasks.notifications_dispatch_pending",
            "schedule": 30.0,
        },
        "orders-purge-notifications": {"task": "orders.tasks.notifications_purge", "schedule": 3600.0},
        "orders-expire-overdue": {"task": "orders.tasks.orders_expire_overdue", "schedule": 300.0},
        "payouts-progress": {
            "task": "payouts.tasks.payouts_progress",
            "schedule": payouts_progress_seconds,
        },
        "idempotency-purge-expired": {
            "task": "partners.idempotency.tasks.idempotency_key_purge_expired",
            "schedule": 3600.0,
        },
        # Sends webhook attempts that are due but whose Celery message was lost (the row is the truth).
        "webhooks-send-due": {"task": "orders.webhooks.tasks.deliveries_send_due", "schedule": 30.0},
        "webhooks-purge-old": {"task": "orders.webhooks.tasks.deliveries_purge", "schedule": 3600.0},
        # Raw inbound mail past INBOUND_RAW_RETENTION_DAYS: the rows and their verdicts stay.
        "transfers-purge-raw": {"task": "orders.transfers.tasks.raw_purge", "schedule": 3600.0},
    }
