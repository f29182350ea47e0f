"""One webhook request as Standard Webhooks 1.0 has it: the signed body and headers, the POST within the
attempt's deadline, and what came back as an ``Outcome`` (never an exception)."""

from __future__ import annotations

import http.client
import json
import re
import time
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime

from django.conf import settings
from django.utils import timezone
from standardwebhooks import Webhook

from orders.models import Notification

from . import transport
from .models import WebhookEndpoint
from .signing_secrets import secret_decrypt
from .targets import Target
from .transport import clean_text, text_of

# A Retry-After beyond this (the retry schedule's last interval) is capped: a partner cannot park a delivery
# for longer than that.
RETRY_AFTER_MAX_SECONDS = 86400
# The first 1 KB of an answer's body is kept (as text); no more is ever read.
RESPONSE_EXCERPT_BYTES = 1024
USER_AGENT = "TicketBuyBack-Webhooks/1.0"


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
    # No connection was made: refused, unreachable, or a target the SSRF guard refuses.
    refused: bool = False

    @property
    def timed_out(self) -> bool:
        return self.error.startswith("timeout:")

    @property
    def metric_outcome(self) -> str:
        """``buyback_webhook_attempts_total{outcome}``: succeeded, timeout, refused or failed."""
        if self.succeeded:
            return "succeeded"
        if self.timed_out:
            return "timeout"
        return "refused" if self.refused else "failed"


_DIGITS = re.compile(r"[0-9]+")


def parse_retry_after(value: str | None, *, now: datetime) -> int | None:
    """Seconds from a ``Retry-After`` header (ASCII delta-seconds or an HTTP date), at most 24 h; ``None``
    when unusable. ``²`` and other non-ASCII digits are unusable; a huge number is the cap."""
    if not value:
        return None
    value = value.strip()
    if _DIGITS.fullmatch(value):
        # Compared as text first: int() of a very long digit string is refused (and slow).
        if len(value.lstrip("0")) > len(str(RETRY_AFTER_MAX_SECONDS)):
            return RETRY_AFTER_MAX_SECONDS
        return min(int(value), RETRY_AFTER_MAX_SECONDS)
    if len(value) > 64:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    try:
        seconds = (when - now).total_seconds()
    except OverflowError:
        return None
    return int(min(max(0.0, seconds), RETRY_AFTER_MAX_SECONDS))


def attempt_deadline_seconds() -> float:
    """The wall-clock bound of one attempt, from its connect to the last byte read."""
    return settings.WEBHOOK_ATTEMPT_DEADLINE_SECONDS


def _error_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return clean_text(f"{type(exc).__name__}: {text}" if isinstance(exc, OSError) else text)


def http_post(*, target: Target, headers: dict[str, str], body: str) -> Outcome:
    """POST to the checked address (never a second DNS lookup), no redirects, within the attempt's deadline.

    Whatever comes back is an outcome, never an exception: a timeout, a reset, a refused connection, a
    malformed answer, a body of any size or bytes."""
    deadline = attempt_deadline_seconds()
    started = time.monotonic()
    answer = transport.post(
        scheme=target.scheme,
        address=target.address,
        port=target.port,
        server_hostname=target.host,
        path=target.path,
        headers={**headers, "Host": target.host_header, "Connection": "close"},
        body=body.encode(),
        phase_timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
        deadline_seconds=deadline,
        excerpt_bytes=RESPONSE_EXCERPT_BYTES,
    )
    status = answer.status
    outcome = Outcome(
        succeeded=False,
        response_status=status,
        duration_ms=_ms_since(started),
        response_excerpt=text_of(answer.body),
    )
    if answer.error is not None:
        # The answer did not complete: a failure whatever its status line said.
        phase = settings.WEBHOOK_TIMEOUT_SECONDS
        if answer.deadline_passed:
            outcome.error = f"timeout: the attempt did not complete within {deadline:g} s"
        elif isinstance(answer.error, TimeoutError):
            outcome.error = f"timeout: nothing received for {phase:g} s"
        elif isinstance(answer.error, http.client.HTTPException) and not isinstance(
            answer.error, ConnectionError
        ):
            outcome.error = f"invalid_response: {_error_text(answer.error)}"
        else:
            outcome.error = f"connection_error: {_error_text(answer.error)}"
            outcome.refused = status is None
        if status is not None:
            outcome.error += f" (after HTTP {status})"
        return outcome
    assert status is not None and answer.headers is not None
    outcome.succeeded = 200 <= status < 300
    if 300 <= status < 400:
        location = clean_text(answer.headers.get("Location", "?"))
        outcome.error = f"redirect_not_followed: HTTP {status} to {location}"
    elif not outcome.succeeded:
        outcome.error = f"http_error: HTTP {status}"
    if status in (429, 503):
        outcome.retry_after_seconds = parse_retry_after(answer.headers.get("Retry-After"), now=timezone.now())
    return outcome


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
