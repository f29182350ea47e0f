"""The confirmation's state on the order: started, requeued, and the seller's e-mail sent at most once.

The confirmation itself (charge the card, then move the order to ``awaiting_transfer`` and e-mail the seller)
is run by the app that reacts to ``order.created``; these services are the steps it calls on orders.

The seller's e-mail goes out at most once, by a scheme that never has to guess whether a message left:

1. *claim*: one sender wins a conditional UPDATE (``confirmation_email_claimed_at``). A claim whose sender
   died before step 2 expires after ``EMAIL_CLAIM_LEASE`` and may be claimed again: nothing was sent.
2. the message is rendered and the mail-server connection opened (greeting, EHLO, TLS, login: nothing is
   delivered yet); then *hand-over*: ``confirmation_email_handed_over_at`` is recorded, only if the claim is
   still this sender's, and only then is the message sent. A message that was handed over is never sent
   again automatically.
3. *sent*: ``confirmation_email_sent_at``. A hand-over with no ``sent_at`` after ``EMAIL_HANDOVER_LEASE`` (the recording
   failed, or the sender died during the transfer) is recorded as sent-unconfirmed
   (``confirmation_email_unconfirmed``) and logged for staff: the seller probably got it, and a second copy
   is worse than asking.

Every message carries a Message-ID derived from the order (``seller_mail.confirmation_message_id``).
"""

import logging
import smtplib
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import get_connection
from django.db import connection
from django.db.models import F, Q
from django.utils import timezone

from config.core.backoff import backoff_seconds
from config.core.retrying import DB_ERRORS

from .. import seller_mail
from ..models import Order

logger = logging.getLogger(__name__)

S = Order.Status

# A claim older than this whose message was never handed over is claimed again. Its sender is then between
# its claim and its hand-over (opening the mail connection, EMAIL_TIMEOUT, and recording the hand-over,
# DB_RETRY_SECONDS) or dead; if it is still alive its hand-over finds the claim taken and it stops, so a short
# lease never sends twice: it only bounds how long a claim that could not be released holds the e-mail up.
EMAIL_CLAIM_LEASE = timedelta(seconds=90)
# A hand-over older than this whose sending was never recorded is settled as sent-unconfirmed. Longer than a
# send takes (EMAIL_TIMEOUT), shorter than ORDER_CONFIRMATION_STALE_SECONDS, so the first re-run of a stalled
# confirmation settles it.
EMAIL_HANDOVER_LEASE = timedelta(minutes=4)
# Refusals after which the mail server certainly did not accept the message: the hand-over is undone.
NOT_DELIVERED = (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused, smtplib.SMTPDataError)
# A step whose connection is lost is tried again for this long (backoff 0.1 s doubling to 2 s); longer outages
# fail the task, which retries.
DB_RETRY_SECONDS = 30.0
# The hand-over and the sending, once they happened, are recorded with more patience: a database that is
# back within 3 minutes never leaves a handed-over or sent message unrecorded (which would settle as
# sent-unconfirmed after EMAIL_HANDOVER_LEASE). Holding the worker meanwhile costs nothing: without the
# database it could not confirm anything else either.
RECORD_RETRY_SECONDS = 180.0


def _with_db_retry(
    statement: Callable[[], bool], *, done: Callable[[], bool], seconds: float = DB_RETRY_SECONDS
) -> bool:
    """Run ``statement``; after a lost connection, reconnect, ask ``done`` whether it took effect (the reply
    may have been lost after the commit), and run it again if not — for ``seconds`` at most. Outside a
    transaction only."""
    deadline = time.monotonic() + seconds
    attempt = 0
    while True:
        try:
            if attempt and done():
                return True
            return statement()
        except DB_ERRORS:
            if connection.in_atomic_block or time.monotonic() >= deadline:
                raise
            connection.close()  # the next query opens a fresh connection
            time.sleep(backoff_seconds(attempt, first=0.1, cap=2.0))
            attempt += 1


def order_confirmation_started(*, order_pk: int) -> bool:
    """Record that a confirmation attempt began (outside any transaction: the sweeper reads it even if the
    attempt fails). Returns whether the order exists."""
    return bool(Order.objects.filter(pk=order_pk).update(confirmation_started_at=timezone.now()))


def settle_unconfirmed(*, order_pks: list[int], now: datetime) -> None:
    """Confirmation e-mails handed to the mail server longer than the hand-over lease ago whose sending was never
    recorded: marked sent-unconfirmed, never sent again (the one path and the batches alike)."""
    settled = Order.objects.filter(
        pk__in=order_pks,
        confirmation_email_sent_at__isnull=True,
        confirmation_email_handed_over_at__lt=now - EMAIL_HANDOVER_LEASE,
    ).update(
        confirmation_email_sent_at=F("confirmation_email_handed_over_at"), confirmation_email_unconfirmed=True
    )
    if settled:
        logger.error(
            "%d confirmation e-mail(s) among orders pk=%s were handed to the mail server but their sending was "
            "never recorded: marked sent-unconfirmed, not sent again",
            settled,
            order_pks,
        )


def order_confirmation_email(*, order_pk: int) -> bool:
    """Send the seller's confirmation at most once (see the module docstring); returns whether this call sent it."""
    now = timezone.now()
    settle_unconfirmed(order_pks=[order_pk], now=now)
    order = Order.objects.select_related("partner", "event__venue", "quote").get(pk=order_pk)
    if (
        order.status != S.AWAITING_TRANSFER
        or order.confirmation_email_sent_at is not None
        or order.confirmation_email_handed_over_at is not None
    ):
        return False
    recipient = seller_mail.seller_recipient(order)
    if not recipient:
        logger.warning(
            "Order %s has no seller, quote or partner e-mail: confirmation not sent", order.order_id
        )
        Order.objects.filter(pk=order_pk, confirmation_email_sent_at__isnull=True).update(
            confirmation_email_sent_at=now, confirmation_email_to=""
        )
        return False
    mine = Order.objects.filter(pk=order_pk, confirmation_email_claimed_at=now)
    # Race: two deliveries of the confirmation — only the sender whose UPDATE claims the unsent, not handed
    # over e-mail goes on; its claim's timestamp is its token.
    claimed = _with_db_retry(
        lambda: bool(
            Order.objects.filter(
                pk=order_pk,
                status=S.AWAITING_TRANSFER,
                confirmation_email_sent_at__isnull=True,
                confirmation_email_handed_over_at__isnull=True,
            )
            .filter(
                Q(confirmation_email_claimed_at__isnull=True)
                | Q(confirmation_email_claimed_at__lt=now - EMAIL_CLAIM_LEASE)
            )
            .update(confirmation_email_claimed_at=now, confirmation_email_to=recipient)
        ),
        done=mine.exists,
    )
    if not claimed:
        return False
    mail_connection = get_connection()
    handed_over = False
    try:
        mail_connection.open()  # a refused or broken mail server fails here, before anything is handed over
        handed_over = _with_db_retry(
            lambda: bool(
                mine.filter(confirmation_email_handed_over_at__isnull=True).update(
                    confirmation_email_handed_over_at=timezone.now()
                )
            ),
            done=mine.filter(confirmation_email_handed_over_at__isnull=False).exists,
            seconds=RECORD_RETRY_SECONDS,
        )
        if not handed_over:
            return False  # the claim ran out and another sender took it over
        try:
            seller_mail.send_order_confirmation(order=order, to=recipient, connection=mail_connection)
        except NOT_DELIVERED:
            # The server refused the message: nothing was delivered, so it may be sent again.
            handed_over = False
            mine.update(confirmation_email_handed_over_at=None)
            raise
    except BaseException:
        if not handed_over:
            _release_claim(mine)  # nothing reached the mail server: the retry may claim it at once
        raise
    finally:
        mail_connection.close()
    sent = mine.filter(confirmation_email_sent_at__isnull=True)
    _with_db_retry(
        lambda: bool(sent.update(confirmation_email_sent_at=timezone.now())) or True,
        done=mine.filter(confirmation_email_sent_at__isnull=False).exists,
        seconds=RECORD_RETRY_SECONDS,
    )
    return True


def _release_claim(mine) -> None:
    """Best effort: a claim left behind expires after the lease anyway."""
    try:
        _with_db_retry(
            lambda: (
                mine.filter(confirmation_email_handed_over_at__isnull=True).update(
                    confirmation_email_claimed_at=None
                )
                >= 0
            ),
            done=lambda: not mine.exists(),
        )
    except DB_ERRORS:
        logger.warning(
            "Could not release a confirmation e-mail claim; it expires after the lease", exc_info=True
        )


def order_canceled_email(*, order_pk: int) -> None:
    order = Order.objects.select_related("partner", "event__venue", "quote").filter(pk=order_pk).first()
    if order is None or order.status != S.CANCELED or not order.confirmation_email_to:
        return
    seller_mail.send_order_canceled(order=order, to=order.confirmation_email_to)


def orders_requeue_unconfirmed(
    *, publish_confirmation: Callable[[int], bool], now: datetime | None = None, limit: int = 500
) -> list[int]:
    """Publish again, through ``publish_confirmation(order_pk)``, the confirmations that never began (their
    message was lost) or that stalled (started ``ORDER_CONFIRMATION_STALE_SECONDS`` ago and unfinished).
    Returns the pks it published; each is not published again before the grace or the stale period."""
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
    published = [pk for pk in pks if publish_confirmation(pk)]
    if published:
        Order.objects.filter(pk__in=published).update(confirmation_requeued_at=now)
    return published
