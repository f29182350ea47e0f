"""The seller's confirmation e-mail, at most once (``config.core.mail_once``: claim, hand-over, sent), for the
orders a confirmation moved to ``awaiting_transfer``; many orders over one mail connection, one order as a batch
of one.

Every message carries a Message-ID derived from the order (``orders.seller_mail.confirmation_message_id``).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.utils import timezone

from config.core import mail_once
from orders import seller_mail
from orders.models import Order

logger = logging.getLogger(__name__)

PURPOSE = seller_mail.CONFIRMATION_MAIL
# A claim older than this whose message was never handed over is claimed again. Its sender is then between
# its claim and its hand-over (opening the mail connection, EMAIL_TIMEOUT, and recording the hand-over,
# DB_RETRY_SECONDS) or dead; if it is still alive its hand-over finds the claim taken and it stops, so a short
# lease never sends twice: it only bounds how long a claim that could not be released holds the e-mail up.
EMAIL_CLAIM_LEASE = timedelta(seconds=90)
# A hand-over older than this whose sending was never recorded is settled as sent-unconfirmed. Longer than a
# send takes (EMAIL_TIMEOUT), shorter than ORDER_CONFIRMATION_STALE_SECONDS, so the first re-run of a stalled
# confirmation settles it.
EMAIL_HANDOVER_LEASE = timedelta(minutes=4)


def confirmation_emails_send(*, order_pks: list[int]) -> mail_once.Sending:
    """E-mail the sellers of ``order_pks`` that are ``awaiting_transfer`` and whose confirmation never left;
    returns what was sent and what is still owed (by order pk, as text), the error that left each unsent."""
    if not order_pks:
        return mail_once.Sending()
    now = timezone.now()
    mail_once.settle_unconfirmed(
        purpose=PURPOSE, keys=order_pks, handover_lease=EMAIL_HANDOVER_LEASE, now=now
    )
    done = mail_once.finished(purpose=PURPOSE, keys=order_pks)
    orders = {
        str(order.pk): order
        for order in Order.objects.select_related(*seller_mail.CONFIRMATION_RELATED)
        .only(*seller_mail.CONFIRMATION_FIELDS)
        .filter(status=Order.Status.AWAITING_TRANSFER, pk__in=order_pks)
        .order_by()
        if str(order.pk) not in done
    }
    recipients = {key: seller_mail.seller_recipient(order) for key, order in orders.items()}
    nobody = [key for key, recipient in recipients.items() if not recipient]
    for key in nobody:
        logger.warning(
            "Order %s has no seller, quote or partner e-mail: confirmation not sent", orders[key].order_id
        )
    mail_once.mark_nobody(purpose=PURPOSE, keys=nobody, now=now)
    return mail_once.send_once(
        purpose=PURPOSE,
        recipients={key: recipient for key, recipient in recipients.items() if recipient},
        send=lambda key, to, connection: seller_mail.send_order_confirmation(
            order=orders[key], to=to, connection=connection
        ),
        claim_lease=EMAIL_CLAIM_LEASE,
        now=now,
    )
