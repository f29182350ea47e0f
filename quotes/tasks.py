from celery import shared_task

from . import services


@shared_task(name="quotes.tasks.purge_expired_quotes", ignore_result=True)
def purge_expired_quotes(batch_size: int = 1000) -> int:
    """Periodic (beat): delete quotes that expired unused longer ago than QUOTE_RETENTION_DAYS."""
    return services.quote_purge_expired(batch_size=batch_size)
