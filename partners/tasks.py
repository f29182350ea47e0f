import logging

from celery import shared_task

from . import token_cache

logger = logging.getLogger(__name__)


@shared_task(name="partners.tasks.token_revocations_publish")
def token_revocations_publish() -> int:
    """Backstop for revocations made while the shared cache was down (see partners.token_cache)."""
    return token_cache.token_revocations_publish()


@shared_task(name="partners.tasks.token_sessions_flush")
def token_sessions_flush() -> int:
    """The batched writer of token sessions created in Redis (beat, every TOKEN_SESSION_FLUSH_SECONDS): one
    batch after another while they come full, so a burst is written by one run."""
    from . import session_services

    return session_services.token_sessions_flush_all()
