"""Reads on webhook endpoints and deliveries, always scoped to the calling partner and mode."""

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from config.api.pagination import Page, paginate
from config.core.modes import Principal

from . import errors
from .models import WebhookAttempt, WebhookEndpoint

ENDPOINT_ORDERING = ("-created_at", "-id")
ATTEMPT_ORDERING = ("-id",)


def endpoint_get_for_partner(*, principal: Principal, endpoint_id: str) -> WebhookEndpoint:
    """Another partner's (or the other mode's) endpoint is as unknown as a missing one."""
    endpoint = WebhookEndpoint.objects.for_principal(principal).filter(endpoint_id=endpoint_id).first()
    if endpoint is None:
        raise errors.WebhookEndpointNotFound(details={"endpoint_id": endpoint_id})
    return endpoint


def endpoints_of_partner(*, principal: Principal) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.for_principal(principal).order_by(*ENDPOINT_ORDERING)


def endpoint_list(*, principal: Principal, limit: int, cursor: str | None) -> Page:
    return paginate(
        endpoints_of_partner(principal=principal),
        ordering=ENDPOINT_ORDERING,
        limit=limit,
        cursor=cursor,
    )


def attempts_of_endpoint(*, endpoint: WebhookEndpoint) -> QuerySet[WebhookAttempt]:
    return WebhookAttempt.objects.filter(endpoint=endpoint).select_related("delivery__notification")


def attempt_list(*, endpoint: WebhookEndpoint, limit: int, cursor: str | None) -> Page:
    """One row per attempt, newest first."""
    return paginate(
        attempts_of_endpoint(endpoint=endpoint), ordering=ATTEMPT_ORDERING, limit=limit, cursor=cursor
    )


def attempts_recent(*, endpoint: WebhookEndpoint, days: int = 30) -> QuerySet[WebhookAttempt]:
    since = timezone.now() - timedelta(days=days)
    return attempts_of_endpoint(endpoint=endpoint).filter(attempted_at__gte=since).order_by("-id")
