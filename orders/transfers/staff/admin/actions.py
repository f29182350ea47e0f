"""The transfer case's staff actions: mark received, ask the seller, dismiss, mark forged, mark accepted on the
platform (also in bulk from the list), mark recalled.

Each has a confirmation page saying what it does, needs a reason (kept in the case's history) and its own
permission, checked again on the confirming POST; then staff land on the case page with a GET, so a reload
does nothing twice. The case row is locked while an action runs: a second POST (a resubmitted form, a second
tab) finds the case resolved and changes nothing. Every change goes through ``orders.transfers.decision.state``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from config.core.statemachine import IllegalStateMove
from orders import outbox
from orders.models import Order
from orders.transfers.decision import state
from orders.transfers.models import TransferCase
from orders.transfers.staff.mail import send_transfer_question

S = Order.Status
TS = Order.TransferState
R = TransferCase.Resolution
# Orders whose tickets reached the service and may be recorded as accepted on the platform.
ACCEPTABLE_STATUSES = (S.TICKET_RECEIVED,)
RECALLABLE_STATUSES = (S.TICKET_RECEIVED, S.AWAITING_TRANSFER, S.PAYOUT_IN_PROCESS, S.SCHEDULED, S.PAID)


class Refused(Exception):
    """The action does not apply to the case (any more): the message says why; nothing was changed."""


@dataclass(frozen=True)
class CaseAction:
    name: str
    label: str  # the button
    permissions: tuple[str, ...]
    resolution: str
    title: str  # the confirmation's question
    effects: tuple[str, ...]  # what confirming does, as the confirmation lists it
    submit: str
    kind: str = "default"  # "danger": drawn as a destructive button
    ask_accepted: bool = False
    ask_message: bool = False
    effects_note: tuple[str, ...] = field(default=())


ACTIONS: dict[str, CaseAction] = {
    a.name: a
    for a in (
        CaseAction(
            "mark_received",
            "Mark tickets received",
            ("transfers.resolve_transfer_case", "orders.mark_received"),
            R.MARKED_RECEIVED,
            "Mark the tickets of this order received?",
            (
                "the order moves from awaiting transfer to ticket received (reason received_by_staff), with "
                "your reason in its history;",
                "its transfer becomes detected, or accepted if you answer yes below (the payout may then start);",
                "the partner gets order.status_changed and order.transfer_updated notifications;",
                "the case is resolved as “marked received”.",
            ),
            "Yes, mark the tickets received",
            ask_accepted=True,
        ),
        CaseAction(
            "ask_seller",
            "Ask the seller",
            ("transfers.ask_seller",),
            R.ASKED_SELLER,
            "E-mail the seller about this transfer?",
            (
                "the seller gets your message by e-mail (a test order's message goes to the partner's "
                "contact, its subject starting [TEST]);",
                "the order does not change; the case is resolved as “asked the seller”: a new e-mail from "
                "the platform is checked again and opens a new case if it still does not match.",
            ),
            "Yes, e-mail the seller",
            ask_message=True,
        ),
        CaseAction(
            "dismiss",
            "Dismiss",
            ("transfers.resolve_transfer_case",),
            R.DISMISSED,
            "Dismiss this case?",
            ("nothing changes on the order; the case is resolved as “dismissed”.",),
            "Yes, dismiss the case",
        ),
        CaseAction(
            "forged",
            "Mark forged",
            ("transfers.resolve_transfer_case",),
            R.FORGED,
            "Mark this e-mail forged?",
            (
                "the e-mail is recorded as forged: it never moves the order;",
                "nothing changes on the order; the case is resolved as “marked forged”.",
            ),
            "Yes, mark it forged",
            kind="danger",
        ),
        CaseAction(
            "accept",
            "Mark accepted on platform",
            ("transfers.mark_accepted_on_platform",),
            R.ACCEPTED_ON_PLATFORM,
            "Record the tickets as accepted on the platform?",
            (
                "confirm only once you accepted the transfer on the platform (the accept links are below);",
                "the order's transfer becomes accepted (reason accepted_by_staff), so its payout may start;",
                "the partner gets an order.transfer_updated notification;",
                "the case is resolved as “accepted on platform”.",
            ),
            "Yes, the tickets were accepted on the platform",
        ),
        CaseAction(
            "recalled",
            "Mark recalled",
            ("transfers.mark_recalled",),
            R.RECALLED,
            "Mark this transfer recalled by the seller?",
            (
                "before the payout started: the order goes back to awaiting transfer (reason "
                "transfer_recalled), its transfer becomes recalled and the seller is e-mailed the transfer "
                "address again;",
                "after the payout started nothing is reversed: a “recalled after payout” case opens;",
                "the case is resolved as “marked recalled”.",
            ),
            "Yes, mark it recalled",
            kind="danger",
        ),
    )
}


def applies(action: CaseAction, case: TransferCase) -> bool:
    """Whether the case page offers the action's button (the action checks again when it runs)."""
    if case.state == TransferCase.State.RESOLVED:
        return False
    order = case.order
    if action.name in ("dismiss", "forged"):
        return True
    if order is None:
        return False
    if action.name == "mark_received":
        return order.status == S.AWAITING_TRANSFER
    if action.name == "ask_seller":
        return True
    if action.name == "accept":
        return order.status in ACCEPTABLE_STATUSES and order.transfer_state != TS.ACCEPTED
    if action.name == "recalled":
        return order.status in RECALLABLE_STATUSES and order.transfer_state != TS.RECALLED
    return False


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
        if locked.transfer_state == TS.ACCEPTED:
            raise Refused(f"{locked.order_id} was already recorded as accepted on the platform.")
        return state.transfer_accept(
            order=locked, actor=actor, reason=reason, reason_code=outbox.REASON_ACCEPTED_BY_STAFF
        )


def _ask_seller(*, case_pk: int, message: str) -> str:
    """E-mail the seller before the case is locked (no lock is held across SMTP); the address written to.
    Raises ``Refused`` (nothing sent, nothing resolved) when the case cannot be asked about or the mail fails."""
    case = TransferCase.objects.select_related("order").filter(pk=case_pk).first()
    if case is None or case.state == TransferCase.State.RESOLVED:
        raise Refused("This case was already resolved.")
    if case.order is None:
        raise Refused("This case has no order to act on.")
    if not message.strip():
        raise Refused("Write the message to the seller.")
    try:
        to = send_transfer_question(order=case.order, question=message.strip())
    except Exception as exc:  # the mail server refused or is down: nothing is resolved
        raise Refused(f"The e-mail could not be sent ({type(exc).__name__}); try again.") from None
    if not to:
        raise Refused(f"{case.order.order_id} has no seller or partner e-mail address to write to.")
    return to


def case_act(
    *, case_pk: int, action: CaseAction, actor: str, reason: str, accepted: bool = False, message: str = ""
) -> str:
    """Run ``action`` on the case and resolve it, in one transaction with the case locked (asking the seller
    e-mails first, with no lock held); returns what was done, for the page. Raises ``Refused`` (nothing changed) when the case is resolved already or the action
    does not apply to its order."""
    reason = reason.strip()
    if not reason:
        raise Refused("Give a reason for the case's history.")
    sent_to = _ask_seller(case_pk=case_pk, message=message) if action.name == "ask_seller" else ""
    try:
        with transaction.atomic():
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
                done = f"E-mailed {sent_to} about {order.order_id}"
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
