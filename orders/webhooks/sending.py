"""Sending one attempt of a delivery, per Standard Webhooks 1.0, and what its outcome changes.

An attempt is claimed under the delivery's row lock (the Celery message and the sweep may both reach a due
delivery), sent without any transaction open (the partner's server may take the whole timeout), then
recorded under the lock again. ``next_attempt_at`` on the delivery is the truth: a claim pushes it past the
attempt's lease, so a worker that dies mid-send is retried by the sweep once the lease has run out.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime

import urllib3
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook

from orders.models import Notification

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .signing_secrets import secret_decrypt
from .targets import Target, TargetNotAllowed, target_resolve

logger = logging.getLogger(__name__)

# Delay before attempt n + 1 after attempt n failed (README "Notifications › Webhooks"): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
# 20 h, 24 h; then the delivery has failed. Ten attempts in all.
RETRY_DELAYS_SECONDS = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
MAX_ATTEMPTS = len(RETRY_DELAYS_SECONDS) + 1
RETRY_JITTER = 0.2
# A Retry-After beyond this is capped: a partner cannot park a delivery for longer than the last interval.
RETRY_AFTER_MAX_SECONDS = RETRY_DELAYS_SECONDS[-1]
DISABLE_AFTER_FAILING = timedelta(days=3)
RESPONSE_EXCERPT_BYTES = 2048
ERROR_MAX_CHARS = 500
USER_AGENT = "TicketBuyBack-Webhooks/1.0"


def lease_seconds() -> float:
    """How long a claimed attempt keeps others away: the request's timeout plus a margin to record it."""
    return settings.WEBHOOK_TIMEOUT_SECONDS + 60


# --- what is sent ------------------------------------------------------------------------------------------
def delivery_body(notification: Notification) -> str:
    """The notification object plus Standard Webhooks' ``timestamp`` (its ``created_at``), as compact JSON."""
    payload = notification.payload
    body = {
        "id": payload["id"],
        "type": payload["type"],
        "timestamp": payload["created_at"],
        "created_at": payload["created_at"],
        "livemode": payload["livemode"],
        "data": payload["data"],
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def signing_secrets(endpoint: WebhookEndpoint, *, at: datetime) -> list[str]:
    """The current secret, then the previous one while its rotation grace has not expired."""
    secrets = [secret_decrypt(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires is not None and expires > at:
        secrets.append(secret_decrypt(endpoint.previous_secret_encrypted))
    return secrets


def signed_headers(*, endpoint: WebhookEndpoint, msg_id: str, body: str, at: datetime) -> dict[str, str]:
    signatures = [Webhook(secret).sign(msg_id, at, body) for secret in signing_secrets(endpoint, at=at)]
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }


# --- the request -------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    succeeded: bool
    response_status: int | None = None
    error: str = ""
    duration_ms: int = 0
    response_excerpt: str = ""
    retry_after_seconds: int | None = None


def parse_retry_after(value: str | None, *, now: datetime) -> int | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` when unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, int((when - now).total_seconds()))


def http_post(*, target: Target, headers: dict[str, str], body: str) -> Outcome:
    """POST to the checked address (never a second DNS lookup), no redirects, within the timeout."""
    timeout = urllib3.Timeout(total=settings.WEBHOOK_TIMEOUT_SECONDS)
    common = {"port": target.port, "timeout": timeout, "retries": False, "maxsize": 1}
    if target.scheme == "https":
        # Connect to the address, but verify the certificate (and send SNI) for the URL's host name.
        pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
            target.address,
            server_hostname=target.host,
            assert_hostname=target.host,
            cert_reqs="CERT_REQUIRED",
            **common,
        )
    else:
        pool = urllib3.HTTPConnectionPool(target.address, **common)
    started = time.monotonic()
    try:
        response = pool.urlopen(
            "POST",
            target.path,
            body=body.encode(),
            headers={**headers, "Host": target.host_header},
            redirect=False,
            retries=False,
            preload_content=False,
            assert_same_host=False,
        )
        try:
            excerpt = response.read(RESPONSE_EXCERPT_BYTES, decode_content=False) or b""
        finally:
            response.release_conn()
    except urllib3.exceptions.TimeoutError:
        return Outcome(
            succeeded=False,
            error=f"timeout: no answer within {settings.WEBHOOK_TIMEOUT_SECONDS:g} s",
            duration_ms=_ms_since(started),
        )
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        return Outcome(succeeded=False, error=f"connection_error: {exc}", duration_ms=_ms_since(started))
    finally:
        pool.close()
    status = response.status
    outcome = Outcome(
        succeeded=200 <= status < 300,
        response_status=status,
        duration_ms=_ms_since(started),
        response_excerpt=excerpt.decode("utf-8", errors="replace"),
    )
    if 300 <= status < 400:
        outcome.error = f"redirect_not_followed: HTTP {status} to {response.headers.get('Location', '?')}"
    elif not outcome.succeeded:
        outcome.error = f"http_error: HTTP {status}"
    if status in (429, 503):
        outcome.retry_after_seconds = parse_retry_after(
            response.headers.get("Retry-After"), now=timezone.now()
        )
    return outcome


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def retry_delay_seconds(*, attempt_number: int, retry_after_seconds: int | None = None) -> float:
    """Delay before the attempt after ``attempt_number``: the schedule plus up to 20 % jitter, or a longer
    ``Retry-After``."""
    base = RETRY_DELAYS_SECONDS[attempt_number - 1]
    delay = base + random.uniform(0, RETRY_JITTER * base)
    if retry_after_seconds is not None:
        delay = max(delay, min(retry_after_seconds, RETRY_AFTER_MAX_SECONDS))
    return delay


# --- one attempt -------------------------------------------------------------------------------------------
@dataclass
class Claim:
    attempt: WebhookAttempt
    delivery: WebhookDelivery
    endpoint: WebhookEndpoint
    at: datetime


def _claim(*, delivery_pk: int) -> Claim | None:
    now = timezone.now()
    with transaction.atomic():
        # Locked: the Celery message, its redelivery and the sweep may all reach this delivery at once.
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("endpoint", "notification")
            .filter(pk=delivery_pk)
            .first()
        )
        if delivery is None or delivery.next_attempt_at is None or delivery.next_attempt_at > now:
            return None  # done, or not due yet (an early message; the sweep sends it when due)
        endpoint = delivery.endpoint
        if endpoint.status != WebhookEndpoint.Status.ENABLED:
            delivery.state = WebhookDelivery.State.FAILED
            delivery.next_attempt_at = None
            delivery.last_error = "endpoint_disabled: the endpoint was disabled before this attempt"
            delivery.save(update_fields=["state", "next_attempt_at", "last_error", "updated_at"])
            return None
        # An attempt left "pending" by a worker that died mid-send: it has no answer and never will.
        delivery.attempts.filter(status=WebhookAttempt.Status.PENDING).update(
            status=WebhookAttempt.Status.FAILED, error="worker_lost: no result was recorded for this attempt"
        )
        delivery.attempts_count += 1
        delivery.next_attempt_at = now + timedelta(seconds=lease_seconds())
        delivery.save(update_fields=["attempts_count", "next_attempt_at", "updated_at"])
        attempt = WebhookAttempt.objects.create(
            delivery=delivery,
            endpoint=endpoint,
            number=delivery.attempts_count,
            attempted_at=now,
            request_body=delivery_body(delivery.notification),
        )
    return Claim(attempt=attempt, delivery=delivery, endpoint=endpoint, at=now)


def delivery_attempt(*, delivery_pk: int) -> WebhookAttempt | None:
    """Send the due attempt of a delivery and record its outcome; ``None`` when nothing was due."""
    claim = _claim(delivery_pk=delivery_pk)
    if claim is None:
        return None
    try:
        # The SSRF guard again: the host may resolve elsewhere now than when the endpoint was registered.
        target = target_resolve(claim.endpoint.url)
    except TargetNotAllowed as exc:
        outcome = Outcome(succeeded=False, error=f"{exc.issue}: {exc}")
    else:
        try:
            headers = signed_headers(
                endpoint=claim.endpoint,
                msg_id=claim.delivery.notification.notification_id,
                body=claim.attempt.request_body,
                at=claim.at,
            )
        except ValueError as exc:
            # The secret does not decrypt (SECRET_KEY changed without SECRET_KEY_FALLBACKS): never send
            # unsigned; the attempt fails like any other, and rotating the secret mends the endpoint.
            logger.error("Webhook endpoint %s: %s", claim.endpoint.endpoint_id, exc)
            outcome = Outcome(succeeded=False, error=f"secret_unreadable: {exc}")
        else:
            outcome = http_post(target=target, headers=headers, body=claim.attempt.request_body)
    return _record(claim=claim, outcome=outcome)


def _record(*, claim: Claim, outcome: Outcome) -> WebhookAttempt:
    from . import services

    now = timezone.now()
    with transaction.atomic():
        # Locked in this order everywhere (delivery, then endpoint): the outcome of one attempt and the
        # endpoint's failure clock are decided together; two deliveries failing at once must not both
        # miss (or both send) the "endpoint disabled" e-mail.
        delivery = WebhookDelivery.objects.select_for_update().get(pk=claim.delivery.pk)
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=claim.endpoint.pk)
        attempt = claim.attempt
        attempt.response_status = outcome.response_status
        attempt.error = outcome.error[:ERROR_MAX_CHARS]
        attempt.duration_ms = outcome.duration_ms
        attempt.response_body_excerpt = outcome.response_excerpt
        disabled_reason = ""
        retry_in: float | None = None
        if outcome.succeeded:
            attempt.status = WebhookAttempt.Status.SUCCEEDED
            delivery.state = WebhookDelivery.State.SUCCEEDED
            delivery.next_attempt_at = None
            delivery.last_error = ""
            endpoint.failing_since = None
            endpoint.last_success_at = now
        else:
            delivery.last_error = attempt.error
            if endpoint.failing_since is None:
                endpoint.failing_since = attempt.attempted_at
            if outcome.response_status == 410:
                disabled_reason = WebhookEndpoint.DisabledReason.GONE
            elif endpoint.failing_since <= now - DISABLE_AFTER_FAILING:
                disabled_reason = WebhookEndpoint.DisabledReason.FAILING
            final = (
                bool(disabled_reason)
                or attempt.number >= MAX_ATTEMPTS
                or endpoint.status != WebhookEndpoint.Status.ENABLED
            )
            if final:
                attempt.status = WebhookAttempt.Status.FAILED
                delivery.state = WebhookDelivery.State.FAILED
                delivery.next_attempt_at = None
            else:
                retry_in = retry_delay_seconds(
                    attempt_number=attempt.number, retry_after_seconds=outcome.retry_after_seconds
                )
                attempt.status = WebhookAttempt.Status.RETRYING
                attempt.next_attempt_at = now + timedelta(seconds=retry_in)
                delivery.state = WebhookDelivery.State.RETRYING
                delivery.next_attempt_at = attempt.next_attempt_at
        attempt.save()
        delivery.save(update_fields=["state", "next_attempt_at", "last_error", "updated_at"])
        endpoint.save(update_fields=["failing_since", "last_success_at", "updated_at"])
        if disabled_reason and endpoint.status == WebhookEndpoint.Status.ENABLED:
            services.endpoint_disable(endpoint=endpoint, reason=disabled_reason, notify=True)
        if retry_in is not None:
            transaction.on_commit(
                lambda: services.delivery_enqueue(delivery_pk=delivery.pk, countdown=retry_in)
            )
    if not outcome.succeeded:
        logger.info(
            "Webhook %s attempt %d to %s failed: %s",
            delivery.delivery_id,
            attempt.number,
            endpoint.endpoint_id,
            attempt.error,
        )
    return attempt
