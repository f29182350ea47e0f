"""The processing of one stored inbound message: authenticate, parse, match, decide — each stage's
verdict stored on the message (``verdicts["auth"|"parse"|"match"|"decision"]``), every order change through
``orders.transfers.decision.state`` (docs/operations/receiving-mail.md "Transfer detection").

Once per message: a run claims the row (skip-locked, a lease in ``next_attempt_at``), authenticates with no
lock held (DNS), then locks the row to decide, waiting for it at most ``DECIDE_LOCK_WAIT_MS`` (another run's
claim holds it for a moment); a message already ``processed`` returns its outcome, so the same message
delivered twice at once moves the order once. A run that fails on anything but
a named transient error closes the message with an ``unparsed`` case; so does a message whose runs never
finished ``MAX_RUNS`` (5) times, or whose MIME passes the bounds of ``orders.transfers.intake.bounds``.

- No raw bytes (a provider gave none, or purged) → an ``unverifiable`` case.
- A temporary DNS failure → stage ``deferred``, tried again 1, 5, 15 and 60 min later (``attempts``), then an
  ``auth_temperror`` case.
- Not authentic → a case of the verdict's kind (``unverified``, ``replay_suspected``).
- Authentic mail to a ``mobile_qr`` order with ticket files attached: the files are checked
  (``orders.transfers.files.services.message_attachments_check``) and their verdict decides.
- Authentic, but no template, no kind recognised or required fields missing → an ``unparsed`` case showing
  the text. Otherwise the decision by kind (``orders.transfers.decision.services.decide``).

It sits above every stage it drives (intake, authenticity, reading, decision, files: import-linter's layers in
pyproject.toml). The authentication is ``authenticate`` of ``orders.transfers.authenticity.authenticate``, called
through this module's name for it (the one seam: a test replaces ``process.authenticate``).
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta
from email import policy
from email.parser import BytesHeaderParser
from email.utils import parseaddr, parsedate_to_datetime

from django.db import connection, transaction
from django.utils import timezone

from config.core.retrying import TRANSIENT_ERRORS
from orders.transfers.authenticity.authenticate import authenticate
from orders.transfers.decision import state
from orders.transfers.decision.services import decide as decision
from orders.transfers.decision.services.decide import finish
from orders.transfers.files import services as files
from orders.transfers.intake.bounds import header_section, mime_shape, no_nul
from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.reading import new_platform, platforms
from orders.transfers.verdicts import AuthVerdict

logger = logging.getLogger(__name__)

RETRY_MINUTES = (1, 5, 15, 60)  # after the 1st, 2nd, 3rd and 4th temporary failure; the 5th opens a case
# Runs started and never finished (killed, timed out, failing for now) before the message is closed with a case.
MAX_RUNS = 5
# A run holds its message this long (past the task's hard time limit): the sweep leaves it alone meanwhile.
LEASE = timedelta(minutes=2)
# How long a run waits for the row's lock to decide. Another run's claim holds it for a few milliseconds (and
# leaves the message to this run); a run still deciding (a lease that ran out) holds it longer: the later run then
# fails with PostgreSQL's lock timeout, a transient error, and its task's retry finds the message processed.
DECIDE_LOCK_WAIT_MS = 3000
ACTOR = "system:transfers"
Stage, Outcome, Kind = InboundMessage.Stage, InboundMessage.Outcome, TransferCase.Kind
UNFINISHED = (Stage.RECEIVED, Stage.DEFERRED)


def message_process(*, message_pk: int) -> str:
    """Process the message once; returns its outcome. A message already processed returns its outcome again;
    one deferred and not yet due, or being processed by another run, returns "" and is left for the sweep.

    Three steps, so that no lock is held across DNS: the row is claimed (a short transaction: skip-locked,
    ``runs`` counted, ``next_attempt_at`` leased); the message is authenticated with no lock held; then the row
    is locked (waited for at most ``DECIDE_LOCK_WAIT_MS``) and, unless another run processed it meanwhile,
    decided. Any error that is not a named transient one ends the message ``processed`` with an ``unparsed``
    case (``message_poisoned``)."""
    claimed = _claim(message_pk)
    if isinstance(claimed, str):
        return claimed
    try:
        return _process(claimed)
    except TRANSIENT_ERRORS:
        # Tried again by the task's retry: the lease is given back so that the retry is not turned away.
        InboundMessage.objects.filter(pk=message_pk, stage__in=UNFINISHED).update(next_attempt_at=None)
        raise
    except Exception as exc:
        logger.exception("Inbound message pk=%s cannot be processed; closing it with a case", message_pk)
        return message_poisoned(message_pk=message_pk, why=f"{exc.__class__.__name__}: {str(exc)[:200]}")


def _claim(message_pk: int) -> InboundMessage | str:
    now = timezone.now()
    with transaction.atomic():
        # Race: the task and the sweep's re-publication running the same message at once. The row is taken by
        # one run (the other skips it) for this short write only; the lease keeps the other runs away after.
        message = (
            InboundMessage.objects.select_for_update(of=("self",), skip_locked=True)
            .select_related("order__event__venue", "order__partner")
            .filter(pk=message_pk)
            .first()
        )
        if message is None:
            return ""
        if message.stage == Stage.PROCESSED:
            return message.outcome
        if message.next_attempt_at and message.next_attempt_at > now:
            return ""  # deferred and not yet due, or leased by a run in progress
        if message.runs >= MAX_RUNS:
            return case(
                message,
                Kind.UNPARSED,
                f"Processing was started {message.runs} times and never finished: the message is not read.",
                {"runs": message.runs},
            )
        message.runs += 1
        message.next_attempt_at = now + LEASE
        message.save(update_fields=["runs", "next_attempt_at"])
    return message


def _process(message: InboundMessage) -> str:
    raw, verdict = None, None
    if message.order_id is not None and not decision.waiting_for_confirmation(message):
        raw = raw_read(message)
        if raw is not None and not mime_shape(raw).problem:
            verdict = authenticate(raw, message=message, order=message.order)  # DNS: no lock held
    with transaction.atomic():
        # Race: two runs of one message (a lease that ran out) deciding it twice: the later one waits for the
        # row at most DECIDE_LOCK_WAIT_MS (then a transient error: retried) and finds it processed.
        locked = _decide_lock(message.pk)
        if locked.stage == Stage.PROCESSED:
            return locked.outcome
        outcome = _run(locked, raw, verdict)
        if locked.stage != Stage.PROCESSED:
            # A run that ended deferred finished: only runs that never finish count towards MAX_RUNS.
            InboundMessage.objects.filter(pk=locked.pk).update(runs=0)
        return outcome


def _decide_lock(message_pk: int) -> InboundMessage:
    """The message's row, locked for the rest of the transaction, waited for at most ``DECIDE_LOCK_WAIT_MS``;
    the transaction's later locks (the order's) wait as the database's setting says."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = {int(DECIDE_LOCK_WAIT_MS)}")
    locked = (
        InboundMessage.objects.select_for_update(of=("self",))
        .select_related("order__event__venue", "order__partner")
        .get(pk=message_pk)
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout TO DEFAULT")
    return locked


def message_poisoned(*, message_pk: int, why: str) -> str:
    """Close a message its processing failed on for good (a hostile structure, an unexpected error, the time
    limit): ``processed`` with an ``unparsed`` case, so that it is never tried again."""
    with transaction.atomic():
        message = (
            InboundMessage.objects.select_for_update(of=("self",))
            .select_related("order")
            .filter(pk=message_pk)
            .first()
        )
        if message is None:
            return ""
        if message.stage == Stage.PROCESSED:
            return message.outcome
        return case(
            message,
            Kind.UNPARSED,
            f"The message could not be processed ({why}): it is not read.",
            {"error": why},
        )


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
    """The headers as the standard library reads them: shown to staff when the authentication read none (the
    header section only, never the MIME body)."""
    try:
        parsed = BytesHeaderParser(policy=policy.default).parsebytes(header_section(raw) + b"\r\n")
        values = {name: str(parsed.get(name, "") or "") for name in ("from", "subject", "date", "message-id")}
    except Exception:  # hostile headers the standard library cannot read: nothing to show
        values = {}
    date = None
    try:
        date = parsedate_to_datetime(values["date"]) if values.get("date") else None
    except (TypeError, ValueError):
        date = None
    if date is not None and timezone.is_naive(date):
        date = None
    return {
        "from": " ".join(values.get("from", "").split()),
        "subject": " ".join(values.get("subject", "").split()),
        "date": date,
        "message_id": values.get("message-id", "").strip(),
    }


def _record_auth(message: InboundMessage, verdict: AuthVerdict, raw: bytes) -> None:
    headers = _headers(raw)
    message.verdicts["auth"] = no_nul(verdict.as_json())
    message.header_from = no_nul(verdict.header_from or headers["from"])[:500]
    message.header_subject = no_nul(verdict.header_subject or headers["subject"])[:500]
    message.message_id = no_nul(verdict.message_id or headers["message_id"])[:500]
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


def _run(message: InboundMessage, raw: bytes | None, verdict: AuthVerdict | None) -> str:
    order = message.order
    if order is None:
        return finish(message, Outcome.IGNORED, {"action": "ignored", "why": "the order no longer exists"})
    if decision.waiting_for_confirmation(message):
        # Authentic, parsed and matched already: only the decision waits for the order's confirmation.
        return decision.offer_settle(message, order)
    raw = raw if raw is not None else raw_read(message)
    if raw is None:
        return case(
            message, Kind.UNVERIFIABLE, "The raw message is not available: it cannot be authenticated."
        )
    problem = mime_shape(raw).problem
    if problem:
        return case(message, Kind.UNPARSED, f"The message is not read: {problem}.", {"problem": problem})
    if verdict is None:
        verdict = authenticate(raw, message=message, order=order)
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
        text = platforms.mail_text(raw).text
        details = {"failures": verdict.failures, "text": text}
        if verdict.unknown_sender and kind == Kind.UNVERIFIED:
            # Staff start the platform's registry entry from it; its activation processes the case again.
            details["new_platform"] = new_platform.facts(auth=verdict.as_json(), text=text, platform=platform)
        return case(
            message,
            kind,
            "Not authentic: " + ("; ".join(verdict.failures) or "authentication failed"),
            details,
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
        entry = platforms.registry().get(platform)
        why = (
            f"No template for the platform {platform!r}"
            if entry is None or not entry.kinds
            else f"Required fields missing: {', '.join(parsed.missing)}"
            if parsed is not None
            else "The subject is of no kind the template knows"
        )
        message.verdicts["parse"] = (
            parsed.as_json() if parsed else {"platform": platform, "recognised": False}
        )
        message.kind = parsed.kind if parsed is not None else ""
        return case(message, Kind.UNPARSED, why, {"text": text, "platform": platform})
    message.verdicts["parse"] = {
        **parsed.as_json(),
        "template_version": platforms.registry().get(platform).version,
    }
    message.kind = parsed.kind
    return decision.decide(message, order, parsed)
