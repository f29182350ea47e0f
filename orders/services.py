"""Every write on orders: creation from a quote, the life cycle, confirmation, expiry.

``order_transition`` is the only code that changes ``Order.status``; the API, the admin, the tasks and the
payouts app all go through it (DECISIONS: order life cycle).
"""

import logging
from datetime import date, timedelta

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from catalog.models import Event, Row
from config.api.envelope import utc_iso
from quotes.codec import decode_quote_id
from quotes.models import Quote

from . import errors, notifications
from .models import Order, OrderStatusHistory
from .uploads import ticket_pdf_delete, ticket_pdf_store

logger = logging.getLogger(__name__)

S = Order.Status

# DECISIONS, "Order life cycle": every legal move. Anything else is refused.
LEGAL_TRANSITIONS: dict[str, frozenset[str]] = {
    S.ACCEPTED: frozenset({S.AWAITING_TRANSFER, S.CANCELED}),
    S.AWAITING_TRANSFER: frozenset({S.TICKET_RECEIVED, S.CANCELED, S.EXPIRED}),
    S.TICKET_RECEIVED: frozenset({S.PAYOUT_IN_PROCESS}),
    S.PAYOUT_IN_PROCESS: frozenset({S.SCHEDULED}),
    S.SCHEDULED: frozenset({S.PAID}),
    S.PAID: frozenset(),
    S.EXPIRED: frozenset(),
    S.CANCELED: frozenset(),
}
# The service no longer buys these tickets: the row's buy-back capacity comes back.
RELEASES_QUANTITY = frozenset({S.CANCELED, S.EXPIRED})
CANCELABLE = frozenset(s for s, targets in LEGAL_TRANSITIONS.items() if S.CANCELED in targets)

IN_HAND_MIN_DAYS_BEFORE_EVENT = 2
# A claimed but unrecorded confirmation e-mail is tried again after this long (the sender died mid-way).
EMAIL_CLAIM_LEASE = timedelta(minutes=10)


# --- creation ----------------------------------------------------------------------------------------------
def latest_in_hand_date(event_date: date) -> date:
    return event_date - timedelta(days=IN_HAND_MIN_DAYS_BEFORE_EVENT)


def order_create(
    *,
    partner_pk: int,
    actor: str,
    quote_id: str,
    delivery_type: str,
    is_ready_to_deliver: bool,
    in_hand_date: date | None = None,
    file: File | None = None,
    seller_email: str = "",
    seller_name: str = "",
    partner_reference: str = "",
) -> Order:
    """Turn the partner's quote into an order, once (spec 4.2; check order of DECISIONS "Orders").

    Consuming the quote, taking the quantity off the row and inserting the order are one transaction, each
    decided by the database, so concurrent requests can neither reuse a quote nor oversell a row.
    """
    quote_pk = decode_quote_id(quote_id)
    quote = (
        Quote.objects.select_related("event").filter(pk=quote_pk).first() if quote_pk is not None else None
    )
    if quote is None:
        raise errors.QuoteNotFound(details={"quote_id": quote_id})
    if quote.partner_id != partner_pk:
        raise errors.Forbidden("The quote belongs to another partner.", details={"quote_id": quote_id})
    now = timezone.now()
    # Spec 3.2: a consumed quote answers QUOTE_ALREADY_CONSUMED "always", even once its TTL is over.
    if quote.consumed_at is not None:
        raise errors.QuoteAlreadyConsumed(details={"quote_id": quote_id})
    if quote.expires_at <= now:
        raise errors.QuoteExpired(details={"quote_id": quote_id, "expired_at": utc_iso(quote.expires_at)})
    event = quote.event
    if in_hand_date is not None and in_hand_date > latest_in_hand_date(event.event_date):
        raise errors.InvalidDeliveryDeadline(
            "in_hand_date is after the event date."
            if in_hand_date > event.event_date
            else "in_hand_date must be at least 2 days before the event date.",
            details={
                "field": "in_hand_date",
                "in_hand_date": in_hand_date.isoformat(),
                "event_date": event.event_date.isoformat(),
                "latest_in_hand_date": latest_in_hand_date(event.event_date).isoformat(),
            },
        )
    if event.is_canceled or event.starts_at <= now:
        raise errors.EventExpired(details={"event_id": event.event_id})

    order = Order(
        partner_id=partner_pk,
        quote=quote,
        event=event,
        row_id=quote.row_id,
        status=S.ACCEPTED,
        status_changed_at=now,
        quote_token=quote_id,
        quote_expires_at=quote.expires_at,
        quantity=quote.quantity,
        offer_price=quote.offer_price,
        face_value=quote.face_value,
        total_price=quote.total_price,
        section_name=quote.section_name,
        section_name_display=quote.section_name_display,
        row_name=quote.row_name,
        row_name_display=quote.row_name_display,
        general_admission=quote.general_admission,
        restrictions=list(quote.restrictions or []),
        restriction_detail=quote.restriction_detail,
        primary_site=quote.primary_site,
        delivery_type=delivery_type,
        is_ready_to_deliver=is_ready_to_deliver,
        in_hand_date=in_hand_date,
        seller_email=seller_email,
        seller_name=seller_name,
        partner_reference=partner_reference,
        created_at=now,
    )
    # The upload goes to storage before the transaction, so no row lock is held while it streams out;
    # a request that then loses the race deletes it again.
    stored_name = ticket_pdf_store(order_id=order.order_id, upload=file) if file is not None else ""
    order.ticket_file.name = stored_name
    try:
        _order_insert(order=order, quote=quote, now=now, actor=actor)
    except BaseException:
        if stored_name:
            ticket_pdf_delete(stored_name)
        raise
    return order


def _order_insert(*, order: Order, quote: Quote, now, actor: str) -> None:
    try:
        with transaction.atomic():
            # Race: N requests with one quote — only the UPDATE that finds consumed_at still NULL wins.
            if not Quote.objects.filter(pk=quote.pk, consumed_at__isnull=True).update(consumed_at=now):
                raise errors.QuoteAlreadyConsumed(details={"quote_id": order.quote_token})
            # Race: orders for different quotes on one row — the conditional decrement never oversells.
            taken = Row.objects.filter(pk=quote.row_id, available_quantity__gte=quote.quantity).update(
                available_quantity=F("available_quantity") - quote.quantity
            )
            if not taken:
                available = (
                    Row.objects.filter(pk=quote.row_id).values_list("available_quantity", flat=True).first()
                )
                raise errors.InsufficientQuantity(
                    "The row no longer has the quoted quantity available.",
                    details={"requested": quote.quantity, "available": available or 0},
                )
            order.save(force_insert=True)
            OrderStatusHistory.objects.create(
                order=order, from_status="", to_status=S.ACCEPTED, at=now, actor=actor, reason="Order created"
            )
            transaction.on_commit(lambda: order_confirmation_enqueue(order_pk=order.pk))
    except IntegrityError as exc:
        # The quote's one-to-one unique index is the last line of defence behind the conditional UPDATE.
        if "quote" in str(exc):
            raise errors.QuoteAlreadyConsumed(details={"quote_id": order.quote_token}) from exc
        raise


# --- life cycle -------------------------------------------------------------------------------------------
def order_transition(*, order: Order, to: str, actor: str, reason: str = "") -> Order:
    """Move ``order`` to ``to`` if the life cycle allows it; write the history row; return the fresh order.

    Raises ``orders.errors.IllegalTransition`` for any move the life cycle does not have (including a move
    to the status the order already has). Canceling or expiring gives the quantity back to the row in the
    same transaction; notifications leave after commit.
    """
    if to not in S.values:
        raise ValueError(f"Unknown order status {to!r}")
    with transaction.atomic():
        # Race: two movers of one order (partner cancel vs. confirmation vs. staff) — one waits, then re-checks.
        locked = Order.objects.select_for_update().get(pk=order.pk)
        from_status = locked.status
        if to not in LEGAL_TRANSITIONS[from_status]:
            raise errors.IllegalTransition(order_id=locked.order_id, from_status=from_status, to_status=to)
        now = timezone.now()
        locked.status = to
        locked.status_changed_at = now
        locked.save(update_fields=["status", "status_changed_at", "updated_at"])
        OrderStatusHistory.objects.create(
            order=locked, from_status=from_status, to_status=to, at=now, actor=actor, reason=reason[:500]
        )
        if to in RELEASES_QUANTITY:
            Row.objects.filter(pk=locked.row_id).update(
                available_quantity=F("available_quantity") + locked.quantity
            )
        if to == S.CANCELED and locked.confirmation_email_sent_at and locked.confirmation_email_to:
            transaction.on_commit(lambda: _enqueue("notify_order_canceled", locked.pk))
        if to == S.CANCELED:
            _refund_if_charged(order_pk=locked.pk)
    order.status = locked.status
    order.status_changed_at = locked.status_changed_at
    return locked


def _refund_if_charged(*, order_pk: int) -> None:
    """A canceled order's succeeded card charge is refunded after commit (an expired one keeps it: the charge
    covers the tickets that were never delivered). Publishing never fails the cancel: the refund sweep in
    ``payouts.tasks.progress_payouts`` refunds it if the message is lost."""
    from payouts.services import refund_enqueue, refund_request

    if refund_request(order_pk=order_pk):
        transaction.on_commit(lambda: refund_enqueue(order_pk=order_pk))


def order_cancel(*, order: Order, actor: str, reason: str = "") -> Order:
    """Cancel from ``accepted`` or ``awaiting_transfer``; anything later is 409 ORDER_NOT_CANCELABLE."""
    try:
        return order_transition(order=order, to=S.CANCELED, actor=actor, reason=reason or "Canceled")
    except errors.IllegalTransition as exc:
        raise errors.OrderNotCancelable(
            f"An order in status {exc.from_status} can no longer be canceled.",
            details={"order_id": order.order_id, "status": exc.from_status},
        ) from exc


# --- confirmation (Celery) ---------------------------------------------------------------------------------
def _enqueue(task_name: str, order_pk: int) -> bool:
    """Publish a task; a broker outage is logged, never raised: the sweeper publishes it again later."""
    from . import tasks

    try:
        getattr(tasks, task_name).delay(order_pk)
    except Exception:
        logger.warning(
            "Could not publish %s for order pk=%s; the sweeper will publish it again",
            task_name,
            order_pk,
            exc_info=True,
        )
        return False
    return True


def order_confirmation_enqueue(*, order_pk: int) -> bool:
    return _enqueue("confirm_order", order_pk)


def order_confirm(*, order_pk: int) -> Order | None:
    """Charge the partner's card for the order, move it to ``awaiting_transfer`` and e-mail the seller.

    Idempotent: a retry or a second delivery charges once (``charge_for_order`` is idempotent per order, and
    only an ``accepted`` order is charged, under its row lock) and mails once (``order_confirmation_email``).
    ``payouts.errors.PlatformUnavailable`` and mail-server errors propagate for the task to retry.
    """
    from payouts.services import charge_for_order

    # Recorded outside the transaction below, so it survives a failed attempt: the sweeper reads it.
    if not Order.objects.filter(pk=order_pk).update(confirmation_started_at=timezone.now()):
        return None
    with transaction.atomic():
        # Race: a cancel arriving while the card is charged — the order's lock makes one wait for the other,
        # so an order is never charged after it was canceled.
        order = Order.objects.select_for_update().get(pk=order_pk)
        if (
            order.status == S.ACCEPTED
            and Event.objects.filter(pk=order.event_id, status=Event.Status.CANCELED).exists()
        ):
            # The event was canceled between the order and its confirmation: never charge for it.
            return order_transition(
                order=order, to=S.CANCELED, actor="system:catalog", reason=EVENT_CANCELED_REASON
            )
        if order.status == S.ACCEPTED:
            charge = charge_for_order(order=order)
            if charge.status == "succeeded":
                order = order_transition(
                    order=order, to=S.AWAITING_TRANSFER, actor="system:confirmation", reason="Card charged"
                )
            else:
                reason = f"Card declined: {charge.failure_reason or 'no reason given'}"
                return order_transition(order=order, to=S.CANCELED, actor="system:payment", reason=reason)
    if order.status == S.AWAITING_TRANSFER:
        order_confirmation_email(order_pk=order.pk)
    return order


def order_confirmation_email(*, order_pk: int) -> bool:
    """Send the seller's confirmation once; returns whether this call sent it."""
    now = timezone.now()
    # Race: two deliveries of the confirmation task — only the one whose UPDATE claims the unsent e-mail
    # sends it. A claim left by a sender that died expires after EMAIL_CLAIM_LEASE.
    claimed = (
        Order.objects.filter(pk=order_pk, status=S.AWAITING_TRANSFER, confirmation_email_sent_at__isnull=True)
        .filter(
            Q(confirmation_email_claimed_at__isnull=True)
            | Q(confirmation_email_claimed_at__lt=now - EMAIL_CLAIM_LEASE)
        )
        .update(confirmation_email_claimed_at=now)
    )
    if not claimed:
        return False
    order = Order.objects.select_related("partner", "event__venue", "quote").get(pk=order_pk)
    recipient = notifications.seller_recipient(order)
    if not recipient:
        logger.warning(
            "Order %s has no seller, quote or partner e-mail: confirmation not sent", order.order_id
        )
    else:
        try:
            notifications.send_order_confirmation(order=order, to=recipient)
        except BaseException:
            Order.objects.filter(pk=order_pk).update(confirmation_email_claimed_at=None)
            raise
    Order.objects.filter(pk=order_pk).update(
        confirmation_email_sent_at=timezone.now(), confirmation_email_to=recipient
    )
    return bool(recipient)


def order_canceled_email(*, order_pk: int) -> None:
    order = Order.objects.select_related("partner", "event__venue", "quote").filter(pk=order_pk).first()
    if order is None or order.status != S.CANCELED or not order.confirmation_email_to:
        return
    notifications.send_order_canceled(order=order, to=order.confirmation_email_to)


def orders_requeue_unconfirmed(*, now=None, limit: int = 500) -> list[int]:
    """Publish again the confirmations whose message never reached a worker (broker down at creation) or
    whose attempts stalled. Returns the pks it published."""
    now = now or timezone.now()
    grace = now - timedelta(seconds=settings.ORDER_CONFIRMATION_GRACE_SECONDS)
    stale = now - timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS)
    never_started = Q(status=S.ACCEPTED, confirmation_started_at__isnull=True, created_at__lt=grace) & (
        Q(confirmation_requeued_at__isnull=True) | Q(confirmation_requeued_at__lt=grace)
    )
    stalled = (
        (Q(status=S.ACCEPTED) | Q(status=S.AWAITING_TRANSFER, confirmation_email_sent_at__isnull=True))
        & Q(confirmation_started_at__lt=stale)
        & (Q(confirmation_requeued_at__isnull=True) | Q(confirmation_requeued_at__lt=stale))
    )
    pks = list(
        Order.objects.filter(never_started | stalled)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    published = [pk for pk in pks if order_confirmation_enqueue(order_pk=pk)]
    if published:
        Order.objects.filter(pk__in=published).update(confirmation_requeued_at=now)
    return published


# --- expiry -----------------------------------------------------------------------------------------------
def orders_expire_overdue(*, now=None) -> list[str]:
    """``awaiting_transfer`` past its in-hand date (venue-local) or, when ready to deliver without one,
    past the event start → ``expired``. Returns the expired order ids."""
    now = now or timezone.now()
    # No venue's local "today" is later than UTC's tomorrow, so this bounds the candidates in SQL.
    horizon = (now + timedelta(days=1)).date()
    candidates = (
        Order.objects.filter(status=S.AWAITING_TRANSFER)
        .filter(Q(in_hand_date__lt=horizon) | Q(in_hand_date__isnull=True, event__starts_at__lte=now))
        .select_related("event")
        .order_by("pk")
    )
    expired = []
    for order in candidates.iterator(chunk_size=200):
        if order.in_hand_date is not None:
            local_today = now.astimezone(order.event.zone).date()
            if local_today <= order.in_hand_date:
                continue
            reason = f"In-hand date {order.in_hand_date.isoformat()} passed before the tickets arrived"
        else:
            reason = "The event started before the tickets arrived"
        try:
            order_transition(order=order, to=S.EXPIRED, actor="system:expiry", reason=reason)
        except errors.IllegalTransition:
            continue  # moved on meanwhile (ticket received, canceled)
        expired.append(order.order_id)
    return expired


# --- canceled events --------------------------------------------------------------------------------------
EVENT_CANCELED_REASON = "The event was canceled"


def orders_cancel_for_canceled_events(*, event_pk: int | None = None) -> list[str]:
    """Cancel the open orders (``accepted``, ``awaiting_transfer``) of canceled events; returns their ids.

    Called right after staff cancel an event and by the periodic expiry run, which catches any event whose
    immediate run never reached the broker.
    """
    candidates = Order.objects.filter(status__in=CANCELABLE, event__status=Event.Status.CANCELED).order_by(
        "pk"
    )
    if event_pk is not None:
        candidates = candidates.filter(event_id=event_pk)
    canceled = []
    for order in candidates.iterator(chunk_size=200):
        try:
            order_transition(order=order, to=S.CANCELED, actor="system:catalog", reason=EVENT_CANCELED_REASON)
        except errors.IllegalTransition:
            continue  # moved on meanwhile
        canceled.append(order.order_id)
    return canceled
