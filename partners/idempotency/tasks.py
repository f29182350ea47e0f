from celery import shared_task

from . import services


@shared_task(name="partners.idempotency.tasks.idempotency_key_purge_expired", ignore_result=True)
def idempotency_key_purge_expired(batch_size: int = 1000) -> int:
    """Periodic (beat): delete idempotency keys older than 24 hours."""
    return services.idempotency_key_purge_expired(batch_size=batch_size)
