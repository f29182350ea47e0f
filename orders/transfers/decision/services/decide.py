"""What an authentic, parsed transfer e-mail does to its order (docs/operations/receiving-mail.md "Transfer detection").

- ``transfer_offer``: matched against the order; a mismatch opens a ``mismatch`` case and sets
  ``transfer.state = mismatch`` (the order stays in ``awaiting_transfer``). A match is recorded as evidence,
  and the order's matched offers since the last cancel notice add up by distinct seats (general admission:
  by ticket count): all of them → ``awaiting_transfer → ticket_received`` (reason ``transfer_detected``);
  fewer → ``transfer.state = partial`` with ``quantity_detected``, and an hour later the seller is e-mailed
  what is missing if the order is still partial.
- An order still ``accepted`` (its confirmation has not run yet) cannot receive its tickets: its complete
  evidence is kept and the message is deferred (1, 5, 15, 60 min, then hourly) until the confirmation moved
  the order to ``awaiting_transfer``; the authentication is not repeated. Partial evidence is recorded at once.
- ``transfer_accepted``: a detected transfer becomes ``accepted`` (reason ``transfer_accepted``); before the
  detection it is evidence only, applied when the offers complete.
- A copy of a message already decided (the same platform and Message-ID, other bytes) that the
  authentication could not catch because both were processed at once is found under the order's lock: for
  the same order it changes nothing (``duplicate``), for another order it opens ``replay_suspected``.
- ``transfer_canceled``: ``state.order_recall`` — before the payout started the order goes back to
  ``awaiting_transfer``; after, a ``recalled_after_payout`` case opens and nothing is reversed.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config.core.publish import publish_on_commit
from orders import outbox
from orders.models import Order
from orders.transfers.decision import state
from orders.transfers.intake.bounds import no_nul
from orders.transfers.models import InboundMessage, TransferCase, TransferEvidence
from orders.transfers.reading.matching import match
from orders.transfers.verdicts import ParsedMail

logger = logging.getLogger(__name__)
S, TS = Order.Status, Order.TransferState
Outcome, Kind, Evidence = InboundMessage.Outcome, TransferCase.Kind, TransferEvidence.Kind
ACTOR = "system:transfers"
PARTIAL_REMINDER_SECONDS = 3600
WAIT_MINUTES = (1, 5, 15, 60)
WAITING = "waiting_for_confirmation"


def finish(message: InboundMessage, outcome: str, action: dict) -> str:
    """Store the decision and close the message (``processed``)."""
    message.verdicts["decision"] = action
    message.verdicts = no_nul(message.verdicts)
    message.outcome = outcome
    message.stage = InboundMessage.Stage.PROCESSED
    message.processed_at = timezone.now()
    message.next_attempt_at = None
    message.save()
    logger.info("Inbound message pk=%s: %s (%s)", message.pk, outcome, action.get("action"))
    return outcome


def _lock(order: Order) -> Order:
    return Order.objects.select_for_update().select_related("event__venue").get(pk=order.pk)


def evidence_record(message: InboundMessage, order: Order, parsed: ParsedMail, *, seats, quantity, matched):
    fields = {k: v for k, v in parsed.as_json().items() if k not in ("text", "missing")}
    try:
        with transaction.atomic():
            return TransferEvidence.objects.create(
                order=order,
                message=message,
                kind=parsed.kind,
                fields=fields,
                seats=seats,
                quantity=quantity,
                matched=matched,
                accept_link=parsed.accept_link,
            )
    except IntegrityError:
        return TransferEvidence.objects.get(order=order, message=message)


def current_evidence(order: Order):
    """The order's evidence since its last cancel notice (a recall voids the offers before it)."""
    evidence = TransferEvidence.objects.filter(order=order, message__isnull=False)
    last_cancel = evidence.filter(kind=Evidence.CANCELED).order_by("-created_at", "-id").first()
    if last_cancel is not None:
        evidence = evidence.filter(id__gt=last_cancel.id)
    return evidence


def offers_detected(order: Order) -> tuple[int, list[str]]:
    """How many tickets the order's matched offers cover: distinct seats (general admission: the sum of the
    ticket counts of distinct messages), and the seats."""
    offers = list(current_evidence(order).filter(kind=Evidence.OFFER, matched=True))
    if order.general_admission:
        return sum(e.quantity for e in offers), []
    seats = list(dict.fromkeys(seat for e in offers for seat in e.seats))
    return len(seats), seats


def _same_message(message: InboundMessage) -> InboundMessage | None:
    """An authentic message of the same platform and Message-ID already decided (or waiting for the order's
    confirmation): a copy of this one with other bytes, which the authentication could not see because both
    were processed at once. Read under the Message-ID's lock, so the first copy has committed."""
    if not message.message_id or not message.platform:
        return None
    return (
        InboundMessage.objects.filter(
            platform=message.platform, message_id=message.message_id, authentic=True
        )
        .exclude(stage=InboundMessage.Stage.RECEIVED)
        .exclude(pk=message.pk)
        .order_by("pk")
        .first()
    )


def _message_id_lock(message: InboundMessage) -> None:
    """Serialise the decisions of one platform's Message-ID until the transaction ends, whatever the order: two
    copies for two orders at once each hold only their own order's lock."""
    if not message.message_id:
        return
    digest = hashlib.sha256(f"{message.platform}\0{message.message_id}".encode()).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest[:8], "big", signed=True)])


def decide(message: InboundMessage, order: Order, parsed: ParsedMail) -> str:
    _message_id_lock(message)
    order = _lock(order)
    first = _same_message(message)
    if first is not None and first.order_id == order.pk:
        # The same message delivered twice at once: it changes the order once (general admission adds up
        # ticket counts by message, so a second copy must not count again).
        return finish(message, Outcome.DUPLICATE, {"action": "none", "why": f"a copy of message {first.pk}"})
    if first is not None:
        return replay_case(message, order, first)
    if parsed.kind == Evidence.OFFER:
        return offer_decide(message, order, parsed)
    if parsed.kind == Evidence.ACCEPTED:
        return accepted_decide(message, order, parsed)
    return canceled_decide(message, order, parsed)


def replay_case(message: InboundMessage, order: Order, first: InboundMessage) -> str:
    summary = f"The same message (Message-ID) was processed at the same time for another order ({first.pk})"
    auth = message.verdicts.setdefault("auth", {})
    auth.update(authentic=False, case_kind=Kind.REPLAY_SUSPECTED, replay_of=[first.pk])
    auth["failures"] = [*auth.get("failures", []), summary]
    opened = state.case_open(
        order=order,
        kind=Kind.REPLAY_SUSPECTED,
        summary=summary,
        message=message,
        details={"failures": auth["failures"]},
    )
    message.authentic = False
    return finish(
        message,
        Outcome.CASE,
        {"action": "case", "case": Kind.REPLAY_SUSPECTED, "case_pk": opened.pk, "why": summary},
    )


def offer_decide(message: InboundMessage, order: Order, parsed: ParsedMail) -> str:
    order = _lock(order)
    result = match(parsed, order)
    message.verdicts["match"] = result.as_json()
    evidence_record(
        message, order, parsed, seats=result.seats, quantity=result.quantity, matched=result.matched
    )
    if not result.matched:
        wrong = [name for name, f in result.fields.items() if not f["ok"]]
        summary = f"The transfer does not match the order: {', '.join(wrong)} differ."
        opened = state.case_open(
            order=order,
            kind=Kind.MISMATCH,
            summary=summary,
            message=message,
            details={"fields": result.fields, "text": parsed.text},
        )
        changed = False
        if order.status in (S.ACCEPTED, S.AWAITING_TRANSFER) and order.transfer.state in (
            TS.NONE,
            TS.PARTIAL,
            TS.RECALLED,
        ):
            state.transfer_transition(
                order=order,
                to=TS.MISMATCH,
                actor=ACTOR,
                reason_code=outbox.REASON_TRANSFER_MISMATCH,
                reason=summary,
            )
            changed = True
        return finish(
            message,
            Outcome.CASE,
            {
                "action": "mismatch",
                "case": Kind.MISMATCH,
                "case_pk": opened.pk,
                "fields": wrong,
                "transfer_state_set": changed,
            },
        )
    return offer_settle(message, order)


def waiting_for_confirmation(message: InboundMessage) -> bool:
    return (
        message.stage == InboundMessage.Stage.DEFERRED
        and message.authentic is True
        and message.verdicts.get("decision", {}).get("action") == WAITING
    )


def offer_settle(message: InboundMessage, order: Order) -> str:
    """Add up the order's matched offers and move the order (or record it partial, or wait)."""
    order = _lock(order)
    detected, seats = offers_detected(order)
    base = {"detected": detected, "quantity": order.quantity, "seats": seats}
    if detected >= order.quantity:
        if order.status == S.ACCEPTED:
            waits = int(message.verdicts.get("decision", {}).get("waits", 0)) + 1
            minutes = WAIT_MINUTES[min(waits, len(WAIT_MINUTES)) - 1]
            message.stage = InboundMessage.Stage.DEFERRED
            message.next_attempt_at = timezone.now() + timedelta(minutes=minutes)
            message.verdicts["decision"] = {**base, "action": WAITING, "waits": waits}
            message.save()
            return ""
        if order.status != S.AWAITING_TRANSFER:
            return finish(
                message,
                Outcome.DUPLICATE if order.status == S.TICKET_RECEIVED else Outcome.IGNORED,
                {
                    **base,
                    "action": "none",
                    "why": f"the order is {order.status}",
                },
            )
        reason = f"Transfer e-mail from {message.platform}: {detected} of {order.quantity} tickets"
        order = state.order_receive(
            order=order,
            source=Order.TransferSource.EMAIL,
            actor=ACTOR,
            reason=reason,
            quantity=order.quantity,
        )
        accepted = current_evidence(order).filter(kind=Evidence.ACCEPTED).exists()
        if accepted and order.transfer.state == TS.DETECTED:
            state.transfer_accept(
                order=order,
                actor=ACTOR,
                reason="The platform's acceptance e-mail arrived before the transfer",
                reason_code=outbox.REASON_TRANSFER_ACCEPTED,
            )
        return finish(message, Outcome.MATCHED, {**base, "action": "received", "accepted": accepted})
    if order.status not in (S.ACCEPTED, S.AWAITING_TRANSFER):
        return finish(
            message, Outcome.IGNORED, {**base, "action": "none", "why": f"the order is {order.status}"}
        )
    state.transfer_transition(
        order=order,
        to=TS.PARTIAL,
        actor=ACTOR,
        reason_code=outbox.REASON_TRANSFER_PARTIAL,
        reason=f"{detected} of {order.quantity} tickets transferred",
        quantity_detected=detected,
        source=Order.TransferSource.EMAIL,
    )
    publish_on_commit("orders.transfers.tasks.partial_reminder", order.pk, countdown=PARTIAL_REMINDER_SECONDS)
    return finish(message, Outcome.PARTIAL, {**base, "action": "partial"})


def accepted_decide(message: InboundMessage, order: Order, parsed: ParsedMail) -> str:
    order = _lock(order)
    evidence_record(message, order, parsed, seats=[], quantity=parsed.quantity, matched=True)
    if order.transfer.state == TS.DETECTED:
        state.transfer_accept(
            order=order,
            actor=ACTOR,
            reason=f"Acceptance e-mail from {message.platform}",
            reason_code=outbox.REASON_TRANSFER_ACCEPTED,
        )
        return finish(message, Outcome.ACCEPTED, {"action": "accepted"})
    why = (
        "already accepted"
        if order.transfer.state == TS.ACCEPTED
        else f"transfer is {order.transfer.state}: recorded as evidence only"
    )
    return finish(message, Outcome.IGNORED, {"action": "evidence", "why": why})


def canceled_decide(message: InboundMessage, order: Order, parsed: ParsedMail) -> str:
    order = _lock(order)
    evidence_record(message, order, parsed, seats=[], quantity=parsed.quantity, matched=True)
    before = order.status
    order = state.order_recall(
        order=order, actor=ACTOR, reason=f"Transfer canceled on {message.platform}", message=message
    )
    if before in (S.PAYOUT_IN_PROCESS, S.SCHEDULED, S.PAID):
        return finish(message, Outcome.CASE, {"action": "case", "case": Kind.RECALLED_AFTER_PAYOUT})
    return finish(message, Outcome.RECALLED, {"action": "recalled", "from": before, "to": order.status})
