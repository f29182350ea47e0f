"""The processing of one stored inbound message: authenticate, parse, match, decide — each stage's
verdict stored on the message (``verdicts["auth"|"parse"|"match"|"decision"]``), every order change through
``orders.transfers.state`` (docs/operations/receiving-mail.md "Transfer detection").

Once per message: the message row is locked (``select_for_update``) for the whole processing and a message
already ``processed`` returns its outcome, so the same message delivered twice at once moves the order once.

- No raw bytes (a provider gave none, or purged) → an ``unverifiable`` case.
- A temporary DNS failure → stage ``deferred``, tried again 1, 5, 15 and 60 min later (``attempts``), then an
  ``auth_temperror`` case.
- Not authentic → a case of the verdict's kind (``unverified``, ``replay_suspected``).
- Authentic mail to a ``mobile_qr`` order with ticket files attached: the files are checked
  (``orders.transfers.files.message_attachments_check``) and their verdict decides.
- Authentic, but no template, no kind recognised or required fields missing → an ``unparsed`` case showing
  the text. Otherwise the decision by kind (``orders.transfers.decision``).

``AUTHENTICATE`` is the one seam to the authentication: ``None`` means
``orders.transfers.auth.authenticate``, resolved at call time.
"""

from __future__ import annotations

import contextlib
import email
import logging
from datetime import datetime, timedelta
from email import policy
from email.utils import parseaddr, parsedate_to_datetime

from django.db import transaction
from django.utils import timezone

from . import decision, files, intake, platforms, state
from .decision import finish
from .models import InboundMessage, TransferCase
from .verdicts import AuthVerdict

logger = logging.getLogger(__name__)

AUTHENTICATE = None
RETRY_MINUTES = (1, 5, 15, 60)  # after the 1st, 2nd, 3rd and 4th temporary failure; the 5th opens a case
ACTOR = "system:transfers"
Stage, Outcome, Kind = InboundMessage.Stage, InboundMessage.Outcome, TransferCase.Kind


def authenticator():
    if AUTHENTICATE is not None:
        return AUTHENTICATE
    from .auth import authenticate

    return authenticate


def message_process(*, message_pk: int) -> str:
    """Process the message once; returns its outcome. A message already processed returns its outcome again;
    a deferred one not yet due returns "" and is left for the retry sweep."""
    with transaction.atomic():
        message = (
            InboundMessage.objects.select_for_update(of=("self",))
            .select_related("order__event__venue", "order__partner")
            .get(pk=message_pk)
        )
        if message.stage == Stage.PROCESSED:
            return message.outcome
        if (
            message.stage == Stage.DEFERRED
            and message.next_attempt_at
            and message.next_attempt_at > timezone.now()
        ):
            return ""
        return _run(message)


def case(message: InboundMessage, kind: str, summary: str, details: dict | None = None) -> str:
    opened = state.case_open(
        order=message.order, kind=kind, summary=summary, message=message, details=details
    )
    return finish(
        message, Outcome.CASE, {"action": "case", "case": kind, "case_pk": opened.pk, "why": summary}
    )


def _defer(message: InboundMessage, minutes: int, action: dict) -> str:
    message.stage = Stage.DEFERRED
    message.next_attempt_at = timezone.now() + timedelta(minutes=minutes)
    message.verdicts["decision"] = action
    message.save()
    return ""


def _headers(raw: bytes) -> dict:
    parsed = email.message_from_bytes(raw, policy=policy.compat32)
    date = None
    try:
        date = parsedate_to_datetime(str(parsed.get("date", ""))) if parsed.get("date") else None
    except (TypeError, ValueError):
        date = None
    if date is not None and timezone.is_naive(date):
        date = None
    return {
        "from": " ".join(str(parsed.get("from", "")).split()),
        "subject": " ".join(str(platforms.mail_text(raw).subject).split()),
        "date": date,
        "message_id": str(parsed.get("message-id", "")).strip(),
    }


def _record_auth(message: InboundMessage, verdict: AuthVerdict, raw: bytes) -> None:
    headers = _headers(raw)
    message.verdicts["auth"] = verdict.as_json()
    message.header_from = (verdict.header_from or headers["from"])[:500]
    message.header_subject = (verdict.header_subject or headers["subject"])[:500]
    message.message_id = (verdict.message_id or headers["message_id"])[:500]
    date = headers["date"]
    if verdict.header_date:
        with contextlib.suppress(ValueError):
            date = datetime.fromisoformat(verdict.header_date)
    message.header_date = date if date is not None and not timezone.is_naive(date) else None
    message.authentic = bool(verdict.authentic) and not verdict.temperror


def _platform(message: InboundMessage, verdict: AuthVerdict) -> str:
    if verdict.sandbox:
        return platforms.SANDBOX
    if verdict.platform:
        return verdict.platform
    domain = parseaddr(message.header_from)[1].rpartition("@")[2]
    return platforms.platform_for_domain(domain) or (message.order.primary_site if message.order else "")


def _run(message: InboundMessage) -> str:
    order = message.order
    if order is None:
        return finish(message, Outcome.IGNORED, {"action": "ignored", "why": "the order no longer exists"})
    if decision.waiting_for_confirmation(message):
        # Authentic, parsed and matched already: only the decision waits for the order's confirmation.
        return decision.offer_settle(message, order)
    raw = intake.raw_read(message)
    if raw is None:
        return case(
            message, Kind.UNVERIFIABLE, "The raw message is not available: it cannot be authenticated."
        )
    verdict = authenticator()(raw, message=message, order=order)
    _record_auth(message, verdict, raw)
    if verdict.temperror:
        message.attempts += 1
        if message.attempts <= len(RETRY_MINUTES):
            return _defer(
                message,
                RETRY_MINUTES[message.attempts - 1],
                {"action": "deferred", "why": "; ".join(verdict.failures) or "temporary DNS failure"},
            )
        return case(
            message,
            Kind.AUTH_TEMPERROR,
            f"DNS kept failing after {message.attempts} attempts: the message could not be authenticated.",
            {"failures": verdict.failures},
        )
    platform = _platform(message, verdict)
    message.platform = platform[:32]
    if verdict.authentic and verdict.sandbox and order.livemode:
        verdict.authentic = False
        verdict.failures.append("signed by the sandbox key, which is accepted for test orders only")
        message.authentic = False
        message.verdicts["auth"] = verdict.as_json()
    if not verdict.authentic:
        kind = verdict.case_kind if verdict.case_kind in Kind.values else Kind.UNVERIFIED
        return case(
            message,
            kind,
            "Not authentic: " + ("; ".join(verdict.failures) or "authentication failed"),
            {"failures": verdict.failures, "text": platforms.mail_text(raw).text},
        )
    if order.delivery_type == order.DeliveryType.MOBILE_QR:
        # The QR codes of a mobile_qr order arrive as the mail's attachments: they are the evidence.
        checked = files.message_attachments_check(message, order, raw)
        if checked is not None:
            verified = checked.verdict == "verified"
            return finish(
                message,
                Outcome.MATCHED if verified else Outcome.CASE,
                {"action": "ticket_file", "verdict": checked.verdict, "check_pk": checked.pk},
            )
    parsed = platforms.parse(raw, platform)
    if parsed is None or parsed.missing:
        text = parsed.text if parsed is not None else platforms.mail_text(raw).text
        why = (
            f"No template for the platform {platform!r}"
            if platform not in platforms.registry()
            else f"Required fields missing: {', '.join(parsed.missing)}"
            if parsed is not None
            else "The subject is of no kind the template knows"
        )
        message.verdicts["parse"] = (
            parsed.as_json() if parsed else {"platform": platform, "recognised": False}
        )
        message.kind = parsed.kind if parsed is not None else ""
        return case(message, Kind.UNPARSED, why, {"text": text, "platform": platform})
    message.verdicts["parse"] = parsed.as_json()
    message.kind = parsed.kind
    return decision.decide(message, order, parsed)
