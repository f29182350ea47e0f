from celery import shared_task

from . import services


@shared_task(name="quotes.tasks.quote_purge_expired", ignore_result=True)
def quote_purge_expired(batch_size: int = 1000) -> int:
    """Periodic (beat): delete quotes that expired unused longer ago than QUOTE_RETENTION_DAYS."""
    return services.quote_purge_expired(batch_size=batch_size)


@shared_task(name="quotes.tasks.quotes_flush", ignore_result=True)
def quotes_flush() -> int:
    """The batched writer of quotes kept in Redis first (beat, every QUOTE_FLUSH_SECONDS): one batch after
    another while they come full, so a burst is written by one run."""
    return services.quotes_flush_all()
