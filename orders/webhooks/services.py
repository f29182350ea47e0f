"""Every write on webhook endpoints and deliveries: the API, the portal, the admin and the tasks call these."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.core import rawsql
from config.core.publish import publish, publish_on_commit
from config.core.purge import delete_in_batches
from orders.models import Notification
from partners.models import Partner

from . import errors
from .machines import endpoint_transition
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, types_include
from .signing_secrets import secret_encrypt, secret_generate
from .targets import TargetNotAllowed, target_resolve

logger = logging.getLogger(__name__)

ROTATION_GRACE_MAX_SECONDS = 86400
SWEEP_GRACE_SECONDS = 60
# A retry further away than this gets no countdown message: Redis would hand an unacknowledged ETA message
# out again after the broker's visibility timeout (an hour), so the sweep sends those when they are due.
COUNTDOWN_MAX_SECONDS = 3600


# --- endpoints ---------------------------------------------------------------------------------------------
def endpoint_url_check(*, url: str) -> None:
    """The SSRF guard at registration: 400 VALIDATION_ERROR on ``url`` (``not_allowed`` and friends)."""
    try:
        target_resolve(url)
    except TargetNotAllowed as exc:
        raise errors.ValidationFailed(str(exc), field="url", issue=exc.issue) from exc


def endpoint_create(
    *, partner_pk: int, livemode: bool, url: str, event_types: list[str], description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """A new enabled endpoint and its secret, in clear: the only time the secret leaves the service."""
    endpoint_url_check(url=url)
    secret = secret_generate()
    with transaction.atomic():
        # Locked: two registrations at once must not both pass the limit of 10 per partner and mode.
        Partner.objects.select_for_update().get(pk=partner_pk)
        count = WebhookEndpoint.objects.filter(partner_id=partner_pk, livemode=livemode).count()
        if count >= settings.WEBHOOK_MAX_ENDPOINTS:
            raise errors.ValidationFailed(
                f"At most {settings.WEBHOOK_MAX_ENDPOINTS} webhook endpoints per partner and mode; delete one "
                "first.",
                field="url",
                issue="too_many_endpoints",
                details={"max_endpoints": settings.WEBHOOK_MAX_ENDPOINTS},
            )
        endpoint = WebhookEndpoint.objects.create(
            partner_id=partner_pk,
            livemode=livemode,
            url=url,
            event_types=event_types,
            description=description,
            secret_encrypted=secret_encrypt(secret),
        )
    return endpoint, secret


def endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    url: str | None = None,
    event_types: list[str] | None = None,
    description: str | None = None,
    status: str | None = None,
    actor: str = "",
) -> WebhookEndpoint:
    """The partner's changes (``actor`` says who made them for the status history; its partner by default)."""
    if url is not None and url != endpoint.url:
        endpoint_url_check(url=url)
    actor = actor or f"partner:{endpoint.partner_id}"
    with transaction.atomic():
        # Locked: a delivery's outcome may be disabling this endpoint at the same moment.
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        if url is not None:
            locked.url = url
        if event_types is not None:
            locked.event_types = event_types
        if description is not None:
            locked.description = description
        locked.save(update_fields=["url", "event_types", "description", "updated_at"])
        if status == WebhookEndpoint.Status.DISABLED and locked.status != status:
            locked = endpoint_transition(
                endpoint=locked,
                to=status,
                actor=actor,
                reason=WebhookEndpoint.DisabledReason.BY_PARTNER.label,
                changes={
                    "disabled_reason": WebhookEndpoint.DisabledReason.BY_PARTNER,
                    "disabled_at": timezone.now(),
                },
            )
        elif status == WebhookEndpoint.Status.ENABLED and locked.status != status:
            # A fresh start: the 3-day failure clock begins again with the next failure.
            locked = endpoint_transition(
                endpoint=locked,
                to=status,
                actor=actor,
                reason=f"enabled again (was: {locked.get_disabled_reason_display()})",
                changes={"disabled_reason": "", "disabled_at": None, "failing_since": None},
            )
    return locked


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Deletes the endpoint with its deliveries and attempts; pending attempts are never sent."""
    endpoint.delete()


def endpoint_rotate_secret(*, endpoint: WebhookEndpoint, expire_previous_in_seconds: int = 86400) -> str:
    """A new secret; the current one keeps signing (as a second signature) for the grace period given."""
    secret = secret_generate()
    now = timezone.now()
    with transaction.atomic():
        # Locked: two rotations at once would otherwise both keep the same "previous" secret.
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        if expire_previous_in_seconds > 0:
            locked.previous_secret_encrypted = locked.secret_encrypted
            locked.previous_secret_expires_at = now + timedelta(seconds=expire_previous_in_seconds)
        else:
            locked.previous_secret_encrypted = ""
            locked.previous_secret_expires_at = None
        locked.secret_encrypted = secret_encrypt(secret)
        locked.save()
    endpoint.refresh_from_db()
    return secret


def endpoint_disable(*, endpoint: WebhookEndpoint, reason: str, notify: bool) -> None:
    """Disable an endpoint the service gave up on, and tell the partner's contact e-mail after commit.

    Called inside the transaction that holds the endpoint's row lock.
    """
    endpoint_transition(
        endpoint=endpoint,
        to=WebhookEndpoint.Status.DISABLED,
        actor="system:webhooks",
        reason=WebhookEndpoint.DisabledReason(reason).label,
        changes={"disabled_reason": reason, "disabled_at": timezone.now()},
    )
    logger.warning("Webhook endpoint %s disabled: %s", endpoint.endpoint_id, reason)
    if notify:
        publish_on_commit("orders.webhooks.tasks.endpoint_disabled_email", endpoint.pk)


# --- deliveries --------------------------------------------------------------------------------------------
def _enqueue(task_name: str, pk: int, *, countdown: float | None = None) -> bool:
    """Publish a task; a broker outage is logged, never raised: the sweep sends due deliveries anyway."""
    return publish(f"orders.webhooks.tasks.{task_name}", pk, countdown=countdown)


def delivery_enqueue(*, delivery_pk: int, countdown: float | None = None, slow: bool = False) -> bool:
    """Publish a delivery's attempt: to the ``webhooks`` queue, or with ``slow`` to ``webhooks_slow`` (the
    lane of endpoints whose last attempt timed out, served by workers of its own)."""
    if countdown is not None and countdown > COUNTDOWN_MAX_SECONDS:
        return False  # the sweep sends it when due (next_attempt_at is the truth)
    return _enqueue("delivery_attempt_slow" if slow else "delivery_attempt", delivery_pk, countdown=countdown)


def deliveries_waiting_release(*, partner_pk: int, limit: int = 2) -> list[int]:
    """First attempts of the partner's deliveries that waited for a free slot (deferred by the limits on
    attempts in flight, never by the retry schedule): due now, and published. Called when an attempt ends
    with an answer, so a burst to a healthy endpoint does not wait out the deferral."""
    now = timezone.now()
    waiting = list(
        WebhookDelivery.objects.filter(
            endpoint__partner_id=partner_pk,
            state=WebhookDelivery.State.PENDING,
            attempts_count=0,
            next_attempt_at__gt=now,
            # A deferral for a slot is at most one deadline away; a backing-off endpoint's is further.
            next_attempt_at__lte=now + timedelta(seconds=settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS + 2),
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    if not waiting:
        return []
    WebhookDelivery.objects.filter(pk__in=waiting, attempts_count=0, next_attempt_at__gt=now).update(
        next_attempt_at=now
    )
    return [pk for pk in waiting if delivery_enqueue(delivery_pk=pk)]


def _delivery_create(*, notification: Notification, endpoint: WebhookEndpoint, kind: str) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.create(
        notification=notification, endpoint=endpoint, kind=kind, next_attempt_at=timezone.now()
    )
    transaction.on_commit(lambda: delivery_enqueue(delivery_pk=delivery.pk))
    return delivery


def _enabled_endpoints(partner_pks):
    """The enabled endpoints of these partners, which the fan-out delivers to (those subscribing to the type)."""
    return WebhookEndpoint.objects.filter(partner_id__in=partner_pks, status=WebhookEndpoint.Status.ENABLED)


def notification_fan_out(notification: Notification) -> list[WebhookDelivery]:
    """The ``orders.signals`` handler: one delivery per enabled endpoint of the partner and mode that
    subscribes to the type. Called at least once per notification, so a second call creates nothing."""
    endpoints = (
        _enabled_endpoints([notification.partner_id]).filter(livemode=notification.livemode).order_by("id")
    )
    created = []
    for endpoint in endpoints:
        if not endpoint.subscribes_to(notification.type):
            continue
        try:
            with transaction.atomic():
                created.append(
                    _delivery_create(
                        notification=notification, endpoint=endpoint, kind=WebhookDelivery.Kind.EVENT
                    )
                )
        except IntegrityError:
            continue  # delivered already by an earlier call (the unique constraint decides, even in a race)
    return created


# What the fan-out's ``idle`` reads of the enabled endpoints, in SQL whose text does not change with the batch
# (the partners as one array parameter): prepared once per connection, where the ORM compiled it for every batch.
_ENABLED_TYPES = rawsql.Select(
    f'SELECT partner_id, livemode, event_types FROM "{WebhookEndpoint._meta.db_table}"'  # noqa: S608
    " WHERE partner_id = ANY(%s::bigint[]) AND status = %s",
    [WebhookEndpoint._meta.get_field(name) for name in ("partner", "livemode", "event_types")],
)


def notifications_without_endpoints(notifications: list[Notification]) -> set[int]:
    """The fan-out's ``idle`` (``orders.signals``): the pks of the notifications that no enabled endpoint of
    their partner and mode subscribes to, for which :func:`notification_fan_out` would create nothing; one
    statement for a delivery batch."""
    subscribed: dict[tuple[int, bool], list[list[str]]] = {}
    partners = sorted({n.partner_id for n in notifications})
    for partner_id, livemode, event_types in _ENABLED_TYPES.fetchall(
        [partners, WebhookEndpoint.Status.ENABLED]
    ):
        subscribed.setdefault((partner_id, livemode), []).append(event_types)
    return {
        n.pk
        for n in notifications
        if not any(types_include(types, n.type) for types in subscribed.get((n.partner_id, n.livemode), ()))
    }


def ping_payload(*, notification_id: str, created_at: datetime, livemode: bool, endpoint_id: str) -> dict:
    return {
        "id": notification_id,
        "type": Notification.Type.WEBHOOK_PING.value,
        "created_at": created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "livemode": livemode,
        "data": {"endpoint_id": endpoint_id},
    }


def endpoint_ping(*, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """A ``webhook.ping`` notification, delivered to this endpoint only, whatever its event types."""
    with transaction.atomic():
        notification = Notification(
            partner_id=endpoint.partner_id, livemode=endpoint.livemode, type=Notification.Type.WEBHOOK_PING
        )
        notification.payload = ping_payload(
            notification_id=notification.notification_id,
            created_at=notification.created_at,
            livemode=endpoint.livemode,
            endpoint_id=endpoint.endpoint_id,
        )
        # Handed to this endpoint here: the registry's subscribers never see pings.
        notification.dispatched_at = notification.created_at
        notification.save()
        return _delivery_create(notification=notification, endpoint=endpoint, kind=WebhookDelivery.Kind.PING)


def delivery_resend(*, endpoint: WebhookEndpoint, notification_id: str) -> WebhookDelivery:
    """One more delivery of one of the partner's notifications (same mode) to this endpoint, now."""
    notification = Notification.objects.filter(
        notification_id=notification_id, partner_id=endpoint.partner_id, livemode=endpoint.livemode
    ).first()
    if notification is None:
        raise errors.NotificationNotFound(details={"notification_id": notification_id})
    with transaction.atomic():
        return _delivery_create(
            notification=notification, endpoint=endpoint, kind=WebhookDelivery.Kind.RESEND
        )


def deliveries_send_due(
    *, now: datetime | None = None, grace_seconds: float | None = None, limit: int = 500
) -> list[int]:
    """The sweep: publish every delivery whose attempt has been due for ``grace_seconds`` (its message was
    lost, never published, or not published because the wait was long). The grace leaves an attempt that is
    due right now to its own countdown message, so a busy queue does not fill up with copies."""
    now = now or timezone.now()
    grace = SWEEP_GRACE_SECONDS if grace_seconds is None else grace_seconds
    pks = list(
        WebhookDelivery.objects.filter(next_attempt_at__lte=now - timedelta(seconds=grace))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    return [pk for pk in pks if delivery_enqueue(delivery_pk=pk)]


def deliveries_purge(*, now: datetime | None = None, batch_size: int = 1000, max_batches: int = 50) -> int:
    """Delete deliveries (and their attempts) older than the retention, in batches that keep locks short."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.WEBHOOK_RETENTION_DAYS)
    return delete_in_batches(
        WebhookDelivery.objects.filter(created_at__lt=cutoff),
        batch_size=batch_size,
        max_batches=max_batches,
        before_delete=lambda pks: WebhookAttempt.objects.filter(delivery_id__in=pks).delete(),
    )
