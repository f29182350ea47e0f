"""Error reports to Sentry (sentry-sdk), only when ``SENTRY_DSN`` is set; nothing is sent otherwise.

What leaves the service never carries a credential or card data: no personal data by default
(the SDK's default: no cookies, no user, no client address), the SDK's ``EventScrubber`` with the
service's own field names added to its denylist (client secrets, webhook secrets, card fields), and
``before_send`` walking the whole event for the values themselves wherever they hide (a message, a local
variable, a query string): bearer tokens, ``access_token=…``, ``whsec_…`` secrets, card numbers. Every
event is tagged with the request id the API answered with (``X-Request-ID``), so a partner's report finds it.
"""

from __future__ import annotations

import re
from typing import Any

import sentry_sdk
from sentry_sdk.integrations.celery import CeleryIntegration
from sentry_sdk.integrations.django import DjangoIntegration
from sentry_sdk.scrubber import DEFAULT_DENYLIST, EventScrubber

from config.logging import request_id_var

REDACTED = "[Filtered]"

# Field names (headers, form fields, JSON keys, local variables) whose value is always dropped.
DENYLIST = [
    *DEFAULT_DENYLIST,
    "client_secret",
    "secret",
    "signing_secret",
    "webhook_secret",
    "new_secret",
    "access_token",
    "refresh_token",
    "token",
    "card_number",
    "number",
    "cvc",
    "cvv",
    "expiry",
    "exp_month",
    "exp_year",
    "account_number",
    "routing_number",
    "iban",
    "x_api_key",
    "idempotency_key",
]

# Values, wherever they appear in a string.
_PATTERNS = [
    # Authorization: Bearer <token> / Basic <credentials>
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/=:]+"), r"\1 " + REDACTED),
    # access_token=…, client_secret=…, token=… in a query string or form body
    (
        re.compile(r"(?i)\b(access_token|refresh_token|client_secret|token|secret)=([^&\s\"']+)"),
        r"\1=" + REDACTED,
    ),
    # client secrets (``sec_…``, ``sec_test_…``) and access tokens (base64url of the JSON claims, signature)
    (re.compile(r"\bsec_[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{16,}"), REDACTED),
    # webhook signing secrets
    (re.compile(r"whsec_[A-Za-z0-9+/=_\-]+"), REDACTED),
    # card numbers: 13 to 19 digits, spaces or dashes between groups allowed
    (re.compile(r"\b(?:\d[ \-]?){12,18}\d\b"), REDACTED),
]


def scrub_text(value: str) -> str:
    for pattern, replacement in _PATTERNS:
        value = pattern.sub(replacement, value)
    return value


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub(item) for item in value)
    return value


def before_send(event: dict, hint: dict) -> dict:
    """The request id as a tag, and every secret-looking value replaced, anywhere in the event."""
    request_id = request_id_var.get()
    if request_id and request_id != "-":
        event.setdefault("tags", {})["request_id"] = request_id
    return _scrub(event)


def sentry_init(*, dsn: str, environment: str = "", traces_sample_rate: float = 0.0, **options: Any) -> None:
    sentry_sdk.init(
        dsn=dsn,
        environment=environment or None,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        event_scrubber=EventScrubber(denylist=DENYLIST, recursive=True),
        before_send=before_send,
        before_send_transaction=before_send,
        traces_sample_rate=traces_sample_rate,
        **options,
    )
