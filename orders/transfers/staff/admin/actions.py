"""The transfer case's staff actions as the case page offers them: mark received, ask the seller, dismiss, mark
forged, mark accepted on the platform (also in bulk from the list), mark recalled.

Each has a confirmation page saying what it does, needs a reason (kept in the case's history) and its own
permission, checked again on the confirming POST; then staff land on the case page with a GET, so a reload
does nothing twice. Running one is ``orders.transfers.staff.services.case_act``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orders.models import Order
from orders.transfers.models import TransferCase
from orders.transfers.staff.services import (
    ACCEPTABLE_STATUSES,
    RECALLABLE_STATUSES,
    Refused,
    case_act,
    order_accept,
)

S = Order.Status
TS = Order.TransferState
R = TransferCase.Resolution


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
        return order.status in ACCEPTABLE_STATUSES and order.transfer.state != TS.ACCEPTED
    if action.name == "recalled":
        return order.status in RECALLABLE_STATUSES and order.transfer.state != TS.RECALLED
    return False


__all__ = ["ACTIONS", "CaseAction", "Refused", "applies", "case_act", "order_accept"]
