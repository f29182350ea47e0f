"""Reads on webhook endpoints and deliveries, always scoped to the calling partner and mode."""

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from config.api.pagination import Page, paginate

from . import errors
from .models import WebhookAttempt, WebhookEndpoint

ENDPOINT_ORDERING = ("-created_at", "-id")
ATTEMPT_ORDERING = ("-id",)


def endpoint_get_for_partner(*, partner_pk: int, livemode: bool, endpoint_id: str) -> WebhookEndpoint:
    """Another partner's (or the other mode's) endpoint is as unknown as a missing one."""
    endpoint = WebhookEndpoint.objects.filter(
        endpoint_id=endpoint_id, partner_id=partner_pk, livemode=livemode
    ).first()
    if endpoint is None:
        raise errors.WebhookEndpointNotFound(details={"endpoint_id": endpoint_id})
    return endpoint


def endpoints_of_partner(*, partner_pk: int, livemode: bool) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(partner_id=partner_pk, livemode=livemode).order_by(
        *ENDPOINT_ORDERING
    )


def endpoint_list(*, partner_pk: int, livemode: bool, limit: int, cursor: str | None) -> Page:
    return paginate(
        endpoints_of_partner(partner_pk=partner_pk, livemode=livemode),
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
