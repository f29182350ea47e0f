"""The periodic work (``CELERY_BEAT_SCHEDULE``): run by ``celery -A config beat`` (the Procfile's ``beat``).
Intervals in seconds."""


def beat_schedule(*, payouts_progress_seconds: float) -> dict[str, dict]:
    return {
        "partners-publish-token-revocations": {
            "task": "partners.tasks.token_revocations_publish",
            "schedule": 60.0,
        },
        "quotes-purge-expired": {"task": "quotes.tasks.quote_purge_expired", "schedule": 3600.0},
        "staff-confirmations-purge": {
            "task": "config.core.tasks.staff_confirmations_purge",
            "schedule": 3600.0,
        },
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
        # The refunds owed on cancels older than the payout run's window (a day): found within the hour.
        "payouts-refunds-sweep": {"task": "payouts.tasks.refunds_sweep", "schedule": 3600.0},
        # The portal's payout totals: the delta rows the payouts' triggers appended, one row per status again.
        "payouts-compact-totals": {"task": "payouts.tasks.payout_totals_compact", "schedule": 300.0},
        "idempotency-purge-expired": {
            "task": "partners.idempotency.tasks.idempotency_key_purge_expired",
            "schedule": 3600.0,
        },
        # Sends webhook attempts that are due but whose Celery message was lost (the row is the truth).
        "webhooks-send-due": {"task": "orders.webhooks.tasks.deliveries_send_due", "schedule": 30.0},
        "webhooks-purge-old": {"task": "orders.webhooks.tasks.deliveries_purge", "schedule": 3600.0},
        # Transfer detection: deferred messages now due, and received ones whose processing message was lost.
        "transfers-process-due": {"task": "orders.transfers.tasks.messages_process_due", "schedule": 60.0},
        "transfers-partial-reminders": {
            "task": "orders.transfers.tasks.partial_reminders_due",
            "schedule": 300.0,
        },
        "transfers-partial-overdue": {
            "task": "orders.transfers.tasks.partial_overdue_sweep",
            "schedule": 900.0,
        },
        # A pdf order whose ticket PDF the confirmation's check never reached.
        "transfers-ticket-files": {"task": "orders.transfers.tasks.ticket_files_sweep", "schedule": 600.0},
        # Unparsed cases a template activation should have processed again, if its task message was lost.
        "transfers-template-reprocess": {
            "task": "orders.transfers.tasks.platform_cases_reprocess_due",
            "schedule": 600.0,
        },
        # "Ask the seller" questions recorded on a resolved case whose task message was lost.
        "transfers-questions-send": {
            "task": "orders.transfers.tasks.transfer_questions_send_due",
            "schedule": 120.0,
        },
        # Raw inbound mail past INBOUND_RAW_RETENTION_DAYS: the rows and their verdicts stay.
        "transfers-purge-raw": {"task": "orders.transfers.tasks.raw_purge", "schedule": 3600.0},
    }


def token_sessions_beat_schedule(*, flush_seconds: float) -> dict[str, dict]:
    """The batched writer of token sessions created in Redis (partners/token_cache.py)."""
    return {
        "partners-flush-token-sessions": {
            "task": "partners.tasks.token_sessions_flush",
            "schedule": flush_seconds,
        }
    }


def quotes_beat_schedule(*, flush_seconds: float) -> dict[str, dict]:
    """The batched writer of quotes kept in Redis first (quotes/quote_cache.py)."""
    return {"quotes-flush": {"task": "quotes.tasks.quotes_flush", "schedule": flush_seconds}}


def inbound_beat_schedule(*, channels: tuple[str, ...], ses_bucket: str) -> dict[str, dict]:
    """Transfer detection's providers: the SES bucket sweep runs only when the ``amazon_ses`` channel has a
    bucket (orders/transfers/intake/providers.py)."""
    if "amazon_ses" not in channels or not ses_bucket:
        return {}
    return {"transfers-ses-sweep": {"task": "orders.transfers.tasks.ses_sweep", "schedule": 300.0}}
