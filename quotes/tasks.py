from celery import shared_task

from . import services


@shared_task(name="quotes.tasks.quote_purge_expired", ignore_result=True)
def quote_purge_expired(batch_size: int = 1000) -> int:
    """Periodic (beat): delete quotes that expired unused longer ago than QUOTE_RETENTION_DAYS."""
    return services.quote_purge_expired(batch_size=batch_size)
