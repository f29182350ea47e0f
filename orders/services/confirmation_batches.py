"""The confirmation's steps for many orders at once (the app that confirms new orders runs them in batches):
the claim of waiting orders, and the sellers' e-mails over one mail connection, each step one statement for
the whole batch, under the same at-most-once scheme as one order's (``confirmation_state``).
"""

import logging

from django.core.mail import get_connection
from django.db.models import Q
from django.utils import timezone

from config.core import rawsql

from .. import seller_mail
from ..models import Order
from .confirmation_state import (
    EMAIL_CLAIM_LEASE,
    NOT_DELIVERED,
    RECORD_RETRY_SECONDS,
    _with_db_retry,
    settle_unconfirmed,
)

logger = logging.getLogger(__name__)

S = Order.Status


def orders_confirmation_claim(*, limit: int, order_pks: list[int] | None = None) -> list[Order]:
    """Lock up to ``limit`` orders waiting for their confirmation (``accepted``, no attempt begun), oldest first,
    with their event and partner, and record that their confirmation began; in the caller's transaction.

    ``order_pks``: those orders only, each still ``accepted`` (begun or not), waiting for a lock another
    confirmation holds rather than skipping it (a caller that waits for the outcome: test mode's advance).
    """
    orders = (
        Order.objects.select_related("event", "partner")
        .filter(status=S.ACCEPTED)
        .order_by("created_at", "pk")
    )
    if order_pks is not None:
        orders = orders.filter(pk__in=order_pks).select_for_update(of=("self",))
    else:
        # Race: two batches at once — each takes the rows the other has not locked, so an order is confirmed
        # by one batch; a single confirmation holding a row (a retry) keeps it.
        orders = orders.filter(confirmation_started_at__isnull=True).select_for_update(
            skip_locked=True, of=("self",)
        )
    claimed = list(orders[:limit])
    if claimed:
        now = timezone.now()
        Order.objects.filter(pk__in=[order.pk for order in claimed]).update(confirmation_started_at=now)
        for order in claimed:
            order.confirmation_started_at = now
    return claimed


def orders_confirmation_email_many(*, order_pks: list[int]) -> tuple[list[int], list[int]]:
    """``order_confirmation_email`` for many orders, over one mail-server connection, each step one statement
    for all of them. Returns the pks whose e-mail this call sent, and those whose e-mail is still owed (the mail
    server was unreachable or refused the message, or the connection broke before their turn): the caller
    hands these to ``order_confirmation_email``, one at a time, to be retried.

    The same at-most-once scheme as one order's (claim, hand-over, sent; see the module docstring): a message
    handed over when the connection broke is never sent again automatically.
    """
    if not order_pks:
        return [], []
    now = timezone.now()
    settle_unconfirmed(order_pks=order_pks, now=now)
    waiting = Q(
        status=S.AWAITING_TRANSFER,
        confirmation_email_sent_at__isnull=True,
        confirmation_email_handed_over_at__isnull=True,
    )
    orders = {
        order.pk: order
        for order in Order.objects.select_related("partner", "event__venue", "quote")
        .filter(waiting, pk__in=order_pks)
        .order_by()
    }
    recipients = {pk: seller_mail.seller_recipient(order) for pk, order in orders.items()}
    nobody = [pk for pk, recipient in recipients.items() if not recipient]
    if nobody:
        for pk in nobody:
            logger.warning(
                "Order %s has no seller, quote or partner e-mail: confirmation not sent", orders[pk].order_id
            )
        Order.objects.filter(pk__in=nobody, confirmation_email_sent_at__isnull=True).update(
            confirmation_email_sent_at=now, confirmation_email_to=""
        )
    wanted = [pk for pk, recipient in recipients.items() if recipient]
    if not wanted:
        return [], []
    mine = Order.objects.filter(pk__in=wanted, confirmation_email_claimed_at=now)
    # Race: two deliveries of one confirmation — only the sender whose UPDATE claims the unsent, not handed
    # over e-mail goes on; its claim's timestamp is its token.
    _with_db_retry(
        lambda: (
            Order.objects.filter(waiting, pk__in=wanted)
            .filter(
                Q(confirmation_email_claimed_at__isnull=True)
                | Q(confirmation_email_claimed_at__lt=now - EMAIL_CLAIM_LEASE)
            )
            .update(confirmation_email_claimed_at=now)
            >= 0
        ),
        done=mine.exists,
    )
    claimed = sorted(mine.values_list("pk", flat=True))
    if not claimed:
        return [], []
    # Each claimed e-mail's recipient, as one order's claim records it.
    for pk in claimed:
        orders[pk].confirmation_email_to = recipients[pk]
    _with_db_retry(
        lambda: rawsql.update_many([orders[pk] for pk in claimed], ["confirmation_email_to"]) >= 0,
        done=lambda: False,
    )
    mine = Order.objects.filter(pk__in=claimed, confirmation_email_claimed_at=now)
    mail_connection = get_connection()
    sent: list[int] = []
    owed: list[int] = []
    handed_over: list[int] = []
    try:
        mail_connection.open()  # a refused or broken mail server fails here, before anything is handed over
        handed_at = timezone.now()
        ours = mine.filter(confirmation_email_handed_over_at=handed_at)
        _with_db_retry(
            lambda: (
                mine.filter(confirmation_email_handed_over_at__isnull=True).update(
                    confirmation_email_handed_over_at=handed_at
                )
                >= 0
            ),
            done=ours.exists,
            seconds=RECORD_RETRY_SECONDS,
        )
        # A claim that ran out meanwhile was taken over by another sender: its message is not ours to send.
        handed_over = sorted(ours.values_list("pk", flat=True))
        for position, pk in enumerate(handed_over):
            try:
                seller_mail.send_order_confirmation(
                    order=orders[pk], to=recipients[pk], connection=mail_connection
                )
            except NOT_DELIVERED:
                owed.append(pk)  # refused: nothing was delivered, so it may be sent again
            except Exception:
                # The connection broke during this message: the seller may have it (never sent again
                # automatically); the messages after it never left.
                logger.warning(
                    "The mail connection broke sending order pk=%s's confirmation", pk, exc_info=True
                )
                owed.extend(handed_over[position + 1 :])
                break
            else:
                sent.append(pk)
    except Exception:
        logger.warning(
            "The mail server could not be reached for %d confirmation(s)", len(claimed), exc_info=True
        )
        owed = [pk for pk in claimed if pk not in sent]
    finally:
        mail_connection.close()
    if owed:
        # Not delivered: the hand-over undone and the claim released, so the retry may claim them at once.
        _with_db_retry(
            lambda: (
                mine.filter(pk__in=owed).update(
                    confirmation_email_handed_over_at=None, confirmation_email_claimed_at=None
                )
                >= 0
            ),
            done=lambda: not mine.filter(pk__in=owed).exists(),
        )
    if sent:
        _with_db_retry(
            lambda: (
                mine.filter(pk__in=sent, confirmation_email_sent_at__isnull=True).update(
                    confirmation_email_sent_at=timezone.now()
                )
                >= 0
            ),
            done=lambda: not mine.filter(pk__in=sent, confirmation_email_sent_at__isnull=True).exists(),
            seconds=RECORD_RETRY_SECONDS,
        )
    return sent, owed
