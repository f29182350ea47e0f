"""Sending one attempt of a delivery, per Standard Webhooks 1.0, and what its outcome changes.

An attempt is claimed under the delivery's row lock (the Celery message and the sweep may both reach a due
delivery), sent without any transaction open (the partner's server may take the whole deadline), then
recorded under the lock again. ``next_attempt_at`` on the delivery is the truth: a claim pushes it past the
attempt's lease, so a worker that dies mid-send is retried by the sweep once the lease has run out.

Isolation (docs/partners/notifications-and-webhooks.md "Webhooks"): the sender ends every attempt 15 s after its connect
(``transport``); a claim is refused while the same delivery has an attempt in flight, and deferred (not an
attempt) while its endpoint has 2 in flight, its partner 4, or the endpoint is backing off after timeouts in
a row. Endpoints whose last attempt timed out are served on the slow lane (``delivery_attempt_slow``).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.core import metrics
from config.core.backoff import backoff_seconds
from config.core.statemachine import IllegalStateMove

from . import services
from .machines import attempt_transition, delivery_transition
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .request import (  # noqa: F401  (the request's names, as the tests and tasks know them here)
    RETRY_AFTER_MAX_SECONDS,
    Outcome,
    attempt_deadline_seconds,
    delivery_body,
    http_post,
    parse_retry_after,
    signed_headers,
)
from .targets import TargetNotAllowed, target_resolve
from .transport import clean_text

logger = logging.getLogger(__name__)

# Delay before attempt n + 1 after attempt n failed (docs/partners/notifications-and-webhooks.md "Webhooks"): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
# 20 h, 24 h; then the delivery has failed. Ten attempts in all.
RETRY_DELAYS_SECONDS = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, RETRY_AFTER_MAX_SECONDS)
MAX_ATTEMPTS = len(RETRY_DELAYS_SECONDS) + 1
RETRY_JITTER = 0.2
DISABLE_AFTER_FAILING = timedelta(days=3)
ERROR_MAX_CHARS = 500


# Isolation (docs/partners/notifications-and-webhooks.md "Webhooks"): at most this many attempts in flight per endpoint, and an
# endpoint whose attempts keep timing out is left alone for a while (BACKOFF), its attempts deferred rather
# than holding workers.
ENDPOINT_MAX_IN_FLIGHT = 2
BACKOFF_FIRST_SECONDS = 60
BACKOFF_MAX_SECONDS = 1800
TIMEOUT_STREAK_LOOKBACK = 8


def task_time_limits() -> tuple[float, float]:
    """Celery's soft and hard time limits of the delivery tasks: above the attempt's own deadline, with room
    to claim and record it."""
    deadline = attempt_deadline_seconds()
    return deadline + 10, deadline + 15


def in_flight_seconds() -> float:
    """An attempt claimed longer ago than this cannot still be running (the hard time limit has ended it);
    a younger ``pending`` attempt is in flight."""
    return task_time_limits()[1]


def lease_seconds() -> float:
    """How long a claimed attempt keeps the sweep away: longer than any attempt may be in flight."""
    return in_flight_seconds() + 40


def endpoint_pause_seconds(timeouts_in_a_row: int, *, jitter: float = 0.0) -> float:
    """How long an endpoint is left alone after its last timeout: none after one, then 1 min doubling, at
    most 30 min (plus up to ``jitter`` of it)."""
    if timeouts_in_a_row < 2:
        return 0
    return backoff_seconds(
        timeouts_in_a_row - 2, first=BACKOFF_FIRST_SECONDS, cap=BACKOFF_MAX_SECONDS, jitter=jitter
    )


def retry_delay_seconds(*, attempt_number: int, retry_after_seconds: int | None = None) -> float:
    """Delay before the attempt after ``attempt_number``: the schedule plus up to 20 % jitter, or a longer
    ``Retry-After``."""
    delay = backoff_seconds(attempt_number - 1, schedule=RETRY_DELAYS_SECONDS, jitter=RETRY_JITTER)
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


@dataclass
class Deferral:
    """Not sent now: published again for ``until`` (``None``: at once, on the slow lane)."""

    until: datetime | None
    slow: bool


def timeout_streak(endpoint_pk: int) -> tuple[int, datetime | None]:
    """How many of the endpoint's last finished attempts timed out in a row, and when the last one started."""
    rows = (
        WebhookAttempt.objects.filter(endpoint_id=endpoint_pk)
        .exclude(status=WebhookAttempt.Status.PENDING)
        .order_by("-id")
        .values_list("error", "attempted_at")[:TIMEOUT_STREAK_LOOKBACK]
    )
    count, last = 0, None
    for error, attempted_at in rows:
        if not error.startswith("timeout:"):
            break
        count += 1
        last = last or attempted_at
    return count, last


def _after_in_flight(started: list[datetime], *, now: datetime) -> datetime:
    """When a slot should be free again: the oldest attempt in flight has then reached its deadline."""
    free_at = min(started) + timedelta(seconds=attempt_deadline_seconds() + 1)
    return max(free_at, now + timedelta(seconds=1)) + timedelta(seconds=random.uniform(0, 1))


def _claim(*, delivery_pk: int, slow_lane: bool = False) -> Claim | Deferral | None:
    now = timezone.now()
    in_flight_since = now - timedelta(seconds=in_flight_seconds())
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
            delivery_transition(
                delivery=delivery,
                to=WebhookDelivery.State.FAILED,
                changes={
                    "next_attempt_at": None,
                    "last_error": "endpoint_disabled: the endpoint was disabled before this attempt",
                },
            )
            return None
        pending = delivery.attempts.filter(status=WebhookAttempt.Status.PENDING)
        if pending.filter(attempted_at__gt=in_flight_since).exists():
            # Its attempt is still running (a lease ran out early, or the sweep re-published it): never send
            # the same delivery twice at once. That attempt records the outcome and schedules what follows.
            return None
        # An attempt left "pending" by a worker that died mid-send: it has no answer and never will.
        for lost in pending:
            attempt_transition(
                attempt=lost,
                to=WebhookAttempt.Status.FAILED,
                changes={"error": "worker_lost: no result was recorded for this attempt"},
            )
            transaction.on_commit(lambda: metrics.webhook_attempt_count("failed"))
        # Every endpoint of the partner, locked in one order: the claims of one partner are decided one at a
        # time, so neither limit on attempts in flight can be passed by two claims at once.
        list(
            WebhookEndpoint.objects.select_for_update()
            .filter(partner_id=endpoint.partner_id)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        deferral = _deferral(endpoint=endpoint, slow_lane=slow_lane, now=now, in_flight_since=in_flight_since)
        if deferral is not None:
            if deferral.until is not None:
                delivery.next_attempt_at = deferral.until
                delivery.save(update_fields=["next_attempt_at", "updated_at"])
            return deferral
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


def _deferral(
    *, endpoint: WebhookEndpoint, slow_lane: bool, now: datetime, in_flight_since: datetime
) -> Deferral | None:
    """Whether this attempt waits: the endpoint is backing off, belongs on the slow lane, or has (or its
    partner has) as many attempts in flight as allowed. Called under the partner's endpoint locks."""
    timeouts, last_timeout = timeout_streak(endpoint.pk)
    slow = timeouts > 0
    if last_timeout is not None:
        resume = last_timeout + timedelta(seconds=endpoint_pause_seconds(timeouts))
        if resume > now:
            pause = endpoint_pause_seconds(timeouts, jitter=RETRY_JITTER)
            return Deferral(until=last_timeout + timedelta(seconds=pause), slow=True)
    if slow and not slow_lane:
        return Deferral(until=None, slow=True)
    in_flight = list(
        WebhookAttempt.objects.filter(
            endpoint__partner_id=endpoint.partner_id,
            status=WebhookAttempt.Status.PENDING,
            attempted_at__gt=in_flight_since,
        ).values_list("endpoint_id", "attempted_at")
    )
    mine = [at for endpoint_pk, at in in_flight if endpoint_pk == endpoint.pk]
    if len(mine) >= ENDPOINT_MAX_IN_FLIGHT:
        return Deferral(until=_after_in_flight(mine, now=now), slow=slow)
    if len(in_flight) >= settings.WEBHOOK_PARTNER_MAX_IN_FLIGHT:
        return Deferral(until=_after_in_flight([at for _, at in in_flight], now=now), slow=slow)
    return None


def delivery_attempt(*, delivery_pk: int, slow_lane: bool = False) -> WebhookAttempt | None:
    """Send the due attempt of a delivery and record its outcome; ``None`` when nothing was sent now (not
    due, in flight already, or deferred: then it is published again for later)."""
    claim = _claim(delivery_pk=delivery_pk, slow_lane=slow_lane)
    if isinstance(claim, Deferral):
        countdown = None if claim.until is None else max(0.0, (claim.until - timezone.now()).total_seconds())
        services.delivery_enqueue(delivery_pk=delivery_pk, countdown=countdown, slow=claim.slow)
        return None
    if claim is None:
        return None
    try:
        outcome = _send(claim)
    except Exception as exc:
        # Whatever went wrong (the worker's soft time limit included), the attempt is recorded and the
        # retry schedule applies: never an attempt left pending to be sent again early.
        is_limit = type(exc).__name__ == "SoftTimeLimitExceeded"
        if not is_limit:
            logger.exception("Webhook attempt of delivery %s failed unexpectedly", claim.delivery.delivery_id)
        outcome = Outcome(
            succeeded=False,
            error=(
                f"timeout: the attempt did not complete within {attempt_deadline_seconds():g} s"
                if is_limit
                else f"internal_error: {clean_text(type(exc).__name__)}"
            ),
            duration_ms=int((timezone.now() - claim.at).total_seconds() * 1000),
        )
    return _record(claim=claim, outcome=outcome)


def _send(claim: Claim) -> Outcome:
    try:
        # The SSRF guard again: the host may resolve elsewhere now than when the endpoint was registered.
        target = target_resolve(claim.endpoint.url)
    except TargetNotAllowed as exc:
        return Outcome(succeeded=False, error=f"{exc.issue}: {exc}", refused=True)
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
        return Outcome(succeeded=False, error=f"secret_unreadable: {exc}")
    return http_post(target=target, headers=headers, body=claim.attempt.request_body)


def _record(*, claim: Claim, outcome: Outcome) -> WebhookAttempt:
    now = timezone.now()
    with transaction.atomic():
        # Locked in this order everywhere (delivery, then endpoint): the outcome of one attempt and the
        # endpoint's failure clock are decided together; two deliveries failing at once must not both
        # miss (or both send) the "endpoint disabled" e-mail.
        delivery = WebhookDelivery.objects.select_for_update().get(pk=claim.delivery.pk)
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=claim.endpoint.pk)
        attempt = claim.attempt
        error = clean_text(outcome.error)[:ERROR_MAX_CHARS]
        recorded = {
            "response_status": outcome.response_status,
            "error": error,
            "duration_ms": outcome.duration_ms,
            "response_body_excerpt": clean_text(outcome.response_excerpt),
            "next_attempt_at": None,
        }
        disabled_reason = ""
        retry_in: float | None = None
        changes: dict = {}
        if outcome.succeeded:
            attempt_to = WebhookAttempt.Status.SUCCEEDED
            to = WebhookDelivery.State.SUCCEEDED
            changes = {"next_attempt_at": None, "last_error": ""}
            endpoint.failing_since = None
            endpoint.last_success_at = now
        else:
            changes = {"last_error": error}
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
                attempt_to = WebhookAttempt.Status.FAILED
                to = WebhookDelivery.State.FAILED
                changes["next_attempt_at"] = None
            else:
                retry_in = retry_delay_seconds(
                    attempt_number=attempt.number, retry_after_seconds=outcome.retry_after_seconds
                )
                attempt_to = WebhookAttempt.Status.RETRYING
                recorded["next_attempt_at"] = now + timedelta(seconds=retry_in)
                to = WebhookDelivery.State.RETRYING
                changes["next_attempt_at"] = recorded["next_attempt_at"]
        if delivery.state in (WebhookDelivery.State.SUCCEEDED, WebhookDelivery.State.FAILED):
            # Another attempt's outcome ended the delivery first (one winner): this one is kept as sent,
            # the delivery is not moved again and nothing more is scheduled.
            if attempt_to == WebhookAttempt.Status.RETRYING:
                attempt_to, recorded["next_attempt_at"] = WebhookAttempt.Status.FAILED, None
            retry_in = None
        else:
            delivery = delivery_transition(delivery=delivery, to=to, changes=changes)
        try:
            attempt = attempt_transition(attempt=attempt, to=attempt_to, changes=recorded)
        except IllegalStateMove:
            # Recorded as lost by a later claim (this worker outlived the hard time limit): kept as recorded.
            logger.warning(
                "Webhook %s attempt %d ended after it was recorded lost", delivery.delivery_id, attempt.number
            )
            attempt.refresh_from_db()
        transaction.on_commit(lambda: metrics.webhook_attempt_count(outcome.metric_outcome))
        endpoint.save(update_fields=["failing_since", "last_success_at", "updated_at"])
        if disabled_reason and endpoint.status == WebhookEndpoint.Status.ENABLED:
            services.endpoint_disable(endpoint=endpoint, reason=disabled_reason, notify=True)
        if retry_in is not None:
            # After a timeout the next attempt goes to the slow lane: it must not hold a worker of the first.
            slow = outcome.timed_out
            transaction.on_commit(
                lambda: services.delivery_enqueue(delivery_pk=delivery.pk, countdown=retry_in, slow=slow)
            )
    if not outcome.timed_out:
        # A slot is free and the endpoint answers: first attempts that waited for one go now.
        services.deliveries_waiting_release(partner_pk=endpoint.partner_id)
    if not outcome.succeeded:
        logger.info(
            "Webhook %s attempt %d to %s failed: %s",
            delivery.delivery_id,
            attempt.number,
            endpoint.endpoint_id,
            attempt.error,
        )
    return attempt
