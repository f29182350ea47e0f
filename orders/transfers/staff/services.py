"""Every write the staff pages of transfer detection make: the case actions and the bulk "Mark accepted on
platform" (docs/staff-guide.md). The admin (``orders.transfers.staff.admin``) calls these and nothing else
to change data; every order and case moves through its transition (``orders.transfers.decision.state``).

The case row is locked while an action runs: a second POST (a resubmitted form, a second tab) finds the case
resolved and changes nothing. No e-mail is sent while the lock is held: asking the seller records the question
on the case as it resolves it under the lock, and hands it to the mail task once the transaction has
committed, so the seller is asked by the one action that resolved the case, and a slow mail server never
holds the row. The case row is the truth: ``transfer_question_send`` claims the unsent question with a conditional
UPDATE (no lock held while the mail server is talked to) and records it sent; ``transfer_questions_send_due``
publishes again the questions whose task message was lost (a broker down, a failed publish).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Protocol

from django.db import transaction
from django.db.models import CharField, Exists, OuterRef, Q
from django.db.models.functions import Cast
from django.utils import timezone

from config.core import mail_once
from config.core.models import MailOnce
from config.core.publish import publish, publish_on_commit
from config.core.statemachine import IllegalStateMove
from orders import outbox
from orders.models import Order
from orders.seller_mail import seller_recipient
from orders.transfers.decision import state
from orders.transfers.models import TransferCase
from orders.transfers.staff import mail

logger = logging.getLogger(__name__)

S = Order.Status
TS = Order.TransferState
# Orders whose tickets reached the service and may be recorded as accepted on the platform.
ACCEPTABLE_STATUSES = (S.TICKET_RECEIVED,)
RECALLABLE_STATUSES = (S.TICKET_RECEIVED, S.AWAITING_TRANSFER, S.PAYOUT_IN_PROCESS, S.SCHEDULED, S.PAID)
QUESTION_TASK = "orders.transfers.tasks.transfer_question_send"
# A sender that claimed a question and died before recording it sent leaves its claim: after this lease the
# sweep publishes the question again (the task's hard time limit is 90 s).
QUESTION_CLAIM_LEASE = timedelta(minutes=10)
# The question to the seller in the e-mails sent at most once (``config.core.mail_once``), keyed by the case's pk.
QUESTION_MAIL = "transfer_question"
# The task published after the commit normally sends the question within seconds; the sweep leaves a just
# resolved case to it.
QUESTION_SWEEP_AFTER = timedelta(minutes=2)
QUESTION_SWEEP_BATCH = 200


class Refused(Exception):
    """The action does not apply to the case (any more): the message says why; nothing was changed."""


class CaseActionLike(Protocol):
    name: str
    label: str
    resolution: str


def order_accept(*, order: Order, actor: str, reason: str) -> Order:
    """Record ``order``'s tickets as accepted on the platform by staff; raises ``Refused`` when it does not
    apply. The order row is locked: two staff members recording it at once write it once."""
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        if locked.status not in ACCEPTABLE_STATUSES:
            raise Refused(
                f"{locked.order_id} is {locked.get_status_display().lower()}: only an order whose tickets were "
                "received is accepted on the platform (an order awaiting transfer is marked received, with "
                "“accepted on the platform” ticked)."
            )
        if locked.transfer.state == TS.ACCEPTED:
            raise Refused(f"{locked.order_id} was already recorded as accepted on the platform.")
        return state.transfer_accept(
            order=locked, actor=actor, reason=reason, reason_code=outbox.REASON_ACCEPTED_BY_STAFF
        )


def _question_recipient(*, order: Order | None, message: str) -> str:
    """Who the seller's question goes to; ``Refused`` (nothing resolved) when there is no one or nothing to ask."""
    if order is None:
        raise Refused("This case has no order to act on.")
    if not message.strip():
        raise Refused("Write the message to the seller.")
    to = seller_recipient(order)
    if not to:
        raise Refused(f"{order.order_id} has no seller or partner e-mail address to write to.")
    return to


def case_act(
    *,
    case_pk: int,
    action: CaseActionLike,
    actor: str,
    reason: str,
    accepted: bool = False,
    message: str = "",
) -> str:
    """Run ``action`` on the case and resolve it, in one transaction with the case locked; returns what was
    done, for the page. Asking the seller sends its e-mail after the commit (``transfer_question_send``), never
    under the lock. Raises ``Refused`` (nothing changed, nothing sent) when the case is resolved already or the
    action does not apply to its order."""
    reason = reason.strip()
    if not reason:
        raise Refused("Give a reason for the case's history.")
    try:
        with transaction.atomic():
            # Two staff members (or tabs) confirming the same case: one acts, the other finds it resolved.
            case = (
                TransferCase.objects.select_for_update(of=("self",)).select_related("order").get(pk=case_pk)
            )
            if case.state == TransferCase.State.RESOLVED:
                raise Refused(f"This case was already resolved ({case.get_resolution_display().lower()}).")
            order = case.order
            done = action.label
            if action.name not in ("dismiss", "forged") and order is None:
                raise Refused("This case has no order to act on.")
            if action.name == "mark_received":
                state.order_receive(
                    order=order,
                    source=Order.TransferSource.STAFF,
                    actor=actor,
                    reason=reason,
                    accepted=accepted,
                )
                done = (
                    f"Marked received{' and accepted on the platform' if accepted else ''}: {order.order_id}"
                )
            elif action.name == "ask_seller":
                to = _question_recipient(order=order, message=message)
                # Recorded with the resolution and handed over once this transaction commits: the question
                # leaves only with the resolution that records it, and the mail server is never waited on
                # under the case's lock. A lost hand-over is the sweep's (``transfer_questions_send_due``).
                TransferCase.objects.filter(pk=case.pk).update(question=message.strip())
                publish_on_commit(QUESTION_TASK, case.pk)
                done = f"E-mailed {to} about {order.order_id}"
            elif action.name == "accept":
                order_accept(order=order, actor=actor, reason=reason)
                done = f"Recorded as accepted on the platform: {order.order_id}"
            elif action.name == "recalled":
                if order.status not in RECALLABLE_STATUSES:
                    raise Refused(
                        f"{order.order_id} is {order.get_status_display().lower()}: nothing to recall."
                    )
                state.order_recall(order=order, actor=actor, reason=reason, message=case.message)
                done = f"Marked recalled: {order.order_id}"
            state.case_move(
                case=case,
                to=TransferCase.State.RESOLVED,
                actor=actor,
                reason=reason,
                resolution=action.resolution,
            )
    except IllegalStateMove as exc:
        raise Refused(f"Not done: {exc}") from None
    return done


def transfer_question_send(*, case_pk: int) -> str:
    """Send the question recorded on the case to the seller, once; returns the recipient ("" when nothing was
    sent: already sent, claimed by another sender, or no one to write to).

    Runs outside any transaction, through the e-mails sent at most once (``config.core.mail_once``, purpose
    ``QUESTION_MAIL``, keyed by the case): the claim is a conditional upsert (one sender wins it; no row stays
    locked while the mail server is talked to), the e-mail goes out, then its sending is recorded with its
    recipient. A send that fails releases the claim, so the task's retry (or the sweep) sends it; a question
    recorded sent is never sent again."""
    now = timezone.now()
    case = (
        TransferCase.objects.select_related("order__event__venue", "order__partner")
        .filter(pk=case_pk, resolution=TransferCase.Resolution.ASKED_SELLER, question__gt="")
        .first()
    )
    if case is None:
        return ""
    if not mail_once.claim(
        purpose=QUESTION_MAIL, recipients={case_pk: ""}, lease=QUESTION_CLAIM_LEASE, now=now
    ):
        return ""
    try:
        to = mail.send_transfer_question(order=case.order, question=case.question) if case.order else ""
    except BaseException:
        mail_once.release(purpose=QUESTION_MAIL, keys=[case_pk], token=now)
        raise
    mail_once.record_sent(purpose=QUESTION_MAIL, keys=[case_pk], token=now, recipient=to)
    return to


def transfer_question_sent(*, case_pk: int) -> tuple[datetime | None, str]:
    """When the case's question was sent, and to whom (``None``, ``""``: not yet)."""
    row = mail_once.rows(QUESTION_MAIL, [case_pk]).filter(sent_at__isnull=False).first()
    return (row.sent_at, row.recipient) if row else (None, "")


def questions_due(*, now=None, limit: int = QUESTION_SWEEP_BATCH) -> list[int]:
    """The cases whose question is unsent and unclaimed (or its claim ran out) well after the resolution."""
    now = now or timezone.now()
    # Sent, or claimed by a sender within its lease.
    taken = MailOnce.objects.filter(
        purpose=QUESTION_MAIL, key=Cast(OuterRef("pk"), output_field=CharField())
    ).filter(Q(sent_at__isnull=False) | Q(claimed_at__gte=now - QUESTION_CLAIM_LEASE))
    return list(
        TransferCase.objects.filter(
            resolution=TransferCase.Resolution.ASKED_SELLER,
            question__gt="",
            resolved_at__lt=now - QUESTION_SWEEP_AFTER,
        )
        .filter(~Exists(taken))
        .order_by("resolved_at")
        .values_list("pk", flat=True)[:limit]
    )


def transfer_questions_send_due() -> int:
    """Publish again the questions whose task message was lost; the task's claim sends each once."""
    due = questions_due()
    for pk in due:
        publish(QUESTION_TASK, pk)
    if due:
        logger.info("Published %d seller question(s) again", len(due))
    return len(due)
