"""The one writer of an order's transfer progress and of the transfer cases (docs/architecture/transfers.md "Transfer
detection").

``transfer_transition`` moves ``TransferProgress.state`` through its machine and writes the
``order.transfer_updated`` notification in the same transaction. ``order_receive`` and ``order_recall`` are
the two moves that also change the order's status (``awaiting_transfer`` ⇄ ``ticket_received``);
``case_open`` and ``case_move`` keep ``TransferProgress.case_open`` true while any case of the order is open,
which is all the payout gate and the expiry need to read. The progress row is made by the first of these writes
about an order (``INSERT … ON CONFLICT``); until then the order reads as the defaults (``Order.transfer``).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from config.core.publish import publish_on_commit
from config.core.statemachine import IllegalStateMove, StateMachine
from orders import outbox
from orders.models import Order
from orders.services import order_transition
from orders.transfers.intake.bounds import no_nul
from orders.transfers.models import TransferCase, TransferCaseHistory, TransferProgress, TransferStateHistory

S = Order.Status
TS = Order.TransferState
CS = TransferCase.State

TRANSFER_MOVES: dict[str, frozenset[str]] = {
    TS.NONE: frozenset({TS.PARTIAL, TS.DETECTED, TS.ACCEPTED, TS.MISMATCH}),
    TS.PARTIAL: frozenset({TS.DETECTED, TS.ACCEPTED, TS.MISMATCH, TS.RECALLED}),
    TS.DETECTED: frozenset({TS.ACCEPTED, TS.MISMATCH, TS.RECALLED, TS.PARTIAL}),
    TS.ACCEPTED: frozenset({TS.RECALLED}),
    TS.MISMATCH: frozenset({TS.PARTIAL, TS.DETECTED, TS.ACCEPTED, TS.RECALLED}),
    TS.RECALLED: frozenset({TS.PARTIAL, TS.DETECTED, TS.ACCEPTED, TS.MISMATCH}),
}
TRANSFER_MACHINE = StateMachine(
    name="transfer",
    field="state",
    moves=TRANSFER_MOVES,
    history=TransferStateHistory,
    history_fk="order",
)

CASE_MOVES: dict[str, frozenset[str]] = {
    CS.OPEN: frozenset({CS.IN_REVIEW, CS.RESOLVED}),
    CS.IN_REVIEW: frozenset({CS.OPEN, CS.RESOLVED}),
    CS.RESOLVED: frozenset(),
}
CASE_MACHINE = StateMachine(
    name="case", field="state", moves=CASE_MOVES, history=TransferCaseHistory, history_fk="case"
)

# The order status reason of a receipt, by the evidence's source.
RECEIVED_REASON = {
    Order.TransferSource.EMAIL: outbox.REASON_TRANSFER_DETECTED,
    Order.TransferSource.FILE: outbox.REASON_FILE_VERIFIED,
    Order.TransferSource.STAFF: outbox.REASON_RECEIVED_BY_STAFF,
}


def _progress_locked(order: Order) -> TransferProgress:
    """``order``'s transfer progress under its row lock, made first (with the defaults) when no write about the
    order made it yet: ``INSERT … ON CONFLICT DO NOTHING``, so two writers making it at once make one row. The row
    is cached on ``order``, so that ``order.transfer`` reads it."""
    TransferProgress.objects.bulk_create([TransferProgress(order_id=order.pk)], ignore_conflicts=True)
    progress = TransferProgress.objects.select_for_update().get(pk=order.pk)
    progress.order = order
    return progress


def _progress_write(order_pk: int, **values) -> None:
    """Set ``values`` on the order's transfer progress in one statement, the row made when it is missing."""
    TransferProgress.objects.bulk_create(
        [TransferProgress(order_id=order_pk, **values)],
        update_conflicts=True,
        unique_fields=["order"],
        update_fields=[*values, "updated_at"],
    )


def transfer_transition(
    *,
    order: Order,
    to: str,
    actor: str,
    reason_code: str,
    reason: str = "",
    quantity_detected: int | None = None,
    source: str | None = None,
) -> Order:
    """Move ``order``'s transfer state to ``to`` and write ``order.transfer_updated``; return the fresh order
    (its ``transfer`` the fresh progress).

    A move to the state the order already has only updates ``quantity_detected`` (and the source), with no
    notification: partners are told of every change of the state. Raises ``IllegalStateMove`` for a move
    the table does not have.
    """
    with transaction.atomic():
        now = timezone.now()
        # The order's lock first, as every writer of the order takes it, then its progress row's.
        locked = Order.objects.select_for_update().get(pk=order.pk)
        progress = _progress_locked(locked)
        changes: dict = {}
        if quantity_detected is not None:
            changes["quantity_detected"] = quantity_detected
        if source is not None:
            changes["source"] = source
        if to in (TS.DETECTED, TS.ACCEPTED) and progress.detected_at is None:
            changes["detected_at"] = now
        if to == TS.ACCEPTED:
            changes["accepted_at"] = now
        if to in (TS.RECALLED,):
            changes.update(accepted_at=None, detected_at=None)
        if to == progress.state:
            for name, value in changes.items():
                setattr(progress, name, value)
            if changes:
                progress.save(update_fields=[*changes, "updated_at"])
            return locked
        progress, previous = TRANSFER_MACHINE.move(
            obj=progress, to=to, actor=actor, reason=reason or reason_code, changes=changes, at=now
        )
        progress.order = locked
        outbox.transfer_notification_record(
            order=locked, previous_transfer_state=previous, reason=reason_code, at=now
        )
    return locked


def order_receive(
    *, order: Order, source: str, actor: str, reason: str, accepted: bool = False, quantity: int | None = None
) -> Order:
    """``awaiting_transfer → ticket_received`` on evidence from ``source`` (``email``, ``file``, ``staff``),
    with the transfer ``detected`` (or ``accepted``, when staff say the tickets were accepted on the platform).

    Raises ``orders.errors.IllegalTransition`` when the order is not awaiting the transfer (a second delivery of
    the same message, an order moved meanwhile): nothing is written then.
    """
    reason_code = RECEIVED_REASON[source]
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        if locked.status != S.AWAITING_TRANSFER:
            # Refused before any transfer change, so that the transaction writes nothing.
            return order_transition(order=locked, to=S.TICKET_RECEIVED, actor=actor, reason=reason)
        target = TS.ACCEPTED if accepted else TS.DETECTED
        current = locked.transfer.state
        if current != target:
            if not TRANSFER_MACHINE.allows(current, target):
                target = TS.DETECTED
            transfer_transition(
                order=locked,
                to=target,
                actor=actor,
                reason_code=reason_code,
                reason=reason,
                quantity_detected=quantity if quantity is not None else locked.quantity,
                source=source,
            )
        return order_transition(
            order=locked, to=S.TICKET_RECEIVED, actor=actor, reason=reason, reason_code=reason_code
        )


def transfer_accept(*, order: Order, actor: str, reason: str, reason_code: str) -> Order:
    """The tickets were accepted on the platform (its authentic ``transfer_accepted`` e-mail, or staff)."""
    return transfer_transition(
        order=order, to=TS.ACCEPTED, actor=actor, reason_code=reason_code, reason=reason
    )


def order_recall(*, order: Order, actor: str, reason: str, message=None) -> Order:
    """The seller recalled the transfer: before the payout started the order goes back to
    ``awaiting_transfer`` (reason ``transfer_recalled``) and the seller is e-mailed the transfer address
    again; after it started only a ``recalled_after_payout`` case opens. Returns the fresh order."""
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        if locked.status in (S.PAYOUT_IN_PROCESS, S.SCHEDULED, S.PAID):
            case_open(
                order=locked,
                kind=TransferCase.Kind.RECALLED_AFTER_PAYOUT,
                summary="The seller recalled the transfer after the payout started: nothing was reversed.",
                message=message,
            )
            return locked
        if locked.status not in (S.TICKET_RECEIVED, S.AWAITING_TRANSFER):
            return locked  # canceled or expired: nothing left to recall
        current = locked.transfer.state
        if current != TS.RECALLED and TRANSFER_MACHINE.allows(current, TS.RECALLED):
            locked = transfer_transition(
                order=locked,
                to=TS.RECALLED,
                actor=actor,
                reason_code=outbox.REASON_TRANSFER_RECALLED,
                reason=reason,
                quantity_detected=0,
            )
        if locked.status == S.TICKET_RECEIVED:
            locked = order_transition(
                order=locked,
                to=S.AWAITING_TRANSFER,
                actor=actor,
                reason=reason,
                reason_code=outbox.REASON_TRANSFER_RECALLED,
            )
        publish_on_commit("orders.transfers.tasks.seller_transfer_reminder", locked.pk, "recalled")
        return locked


# --- cases ------------------------------------------------------------------------------------------------
K = TransferCase.Kind
# The kinds of case that could still lead to a payout, so hold the in-hand expiry while open
# (docs/operations/receiving-mail.md "Receiving mail"); a mismatch or an unparsed mail only when the mail was authentic (or the evidence is a
# ticket file the partner gave). Never: unverified, unverifiable, replay_suspected.
EXPIRY_DEFERRING_KINDS = frozenset(
    {
        K.MISMATCH,
        K.UNPARSED,
        K.PARTIAL_OVERDUE,
        K.AUTH_TEMPERROR,
        K.DUPLICATE_BARCODE,
        K.RECALLED,
        K.RECALLED_AFTER_PAYOUT,
    }
)


def case_defers_expiry(kind: str, message=None) -> bool:
    """Whether a case of ``kind`` opened on ``message`` (``None``: not from mail) holds the in-hand expiry."""
    if kind not in EXPIRY_DEFERRING_KINDS:
        return False
    return message is None or message.authentic is True or kind == K.AUTH_TEMPERROR


def order_expiry_held(order: Order) -> bool:
    """The hook of ``orders.services.orders_expire_overdue``: an open case of the order holds its expiry."""
    return TransferCase.objects.filter(
        order=order, state__in=TransferCase.OPEN_STATES, defers_expiry=True
    ).exists()


def case_open(
    *, order: Order | None, kind: str, summary: str, message=None, details: dict | None = None
) -> TransferCase:
    """Open a staff case (one open case per order, kind and message); the order's transfer keeps ``case_open``."""
    with transaction.atomic():
        existing = TransferCase.objects.filter(
            order=order, kind=kind, message=message, state__in=TransferCase.OPEN_STATES
        ).first()
        if existing is not None:
            return existing
        case = TransferCase.objects.create(
            order=order,
            message=message,
            kind=kind,
            summary=no_nul(summary)[:500],
            details=no_nul(details or {}),
            defers_expiry=case_defers_expiry(kind, message),
        )
        CASE_MACHINE.record(
            obj=case, from_state="", to_state=CS.OPEN, actor="system:transfers", reason=summary
        )
        if order is not None:
            _progress_write(order.pk, case_open=True)
            relation = Order._meta.get_field("transfer_progress")
            if relation.is_cached(order):
                relation.delete_cached_value(order)  # ``order.transfer`` reads the row just written
    return case


def case_move(*, case: TransferCase, to: str, actor: str, reason: str, resolution: str = "") -> TransferCase:
    """Move a case (``open → in_review → resolved``); resolving needs a ``resolution`` and a reason. Raises
    ``IllegalStateMove`` for a case already resolved (a second tab, a reload)."""
    if to == CS.RESOLVED and (not resolution or not reason.strip()):
        raise ValueError("Resolving a case needs a resolution and a reason.")
    with transaction.atomic():
        changes = {}
        if to == CS.RESOLVED:
            changes = {
                "resolution": resolution,
                "resolved_by": actor,
                "resolved_at": timezone.now(),
                "resolution_reason": reason[:500],
            }
        locked, _ = CASE_MACHINE.move(obj=case, to=to, actor=actor, reason=reason, changes=changes)
        if locked.order_id is not None:
            still_open = TransferCase.objects.filter(
                order_id=locked.order_id, state__in=TransferCase.OPEN_STATES
            ).exists()
            _progress_write(locked.order_id, case_open=still_open)
    return locked


__all__ = [
    "CASE_MACHINE",
    "IllegalStateMove",
    "TRANSFER_MACHINE",
    "case_move",
    "case_defers_expiry",
    "case_open",
    "order_receive",
    "order_expiry_held",
    "order_recall",
    "transfer_accept",
    "transfer_transition",
]
