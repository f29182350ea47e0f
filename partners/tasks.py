import logging

from celery import shared_task

from .token_cache import token_revocations_publish

logger = logging.getLogger(__name__)


@shared_task(name="partners.tasks.publish_token_revocations")
def publish_token_revocations() -> int:
    """Backstop for revocations made while the shared cache was down (see partners.token_cache)."""
    return token_revocations_publish()
