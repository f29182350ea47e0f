"""The database side of ``make soak``: run inside Django (``manage.py shell``) after the traffic stopped.

Reads what the clients saw (``expected.json`` in the soak's run directory) and checks it against the
database and the e-mails the worker wrote (``EMAIL_URL=filemail://``). Prints one JSON object.
"""

from __future__ import annotations

import email
import email.header
import json
import re
import sys
from collections import Counter
from pathlib import Path

from django.db.models import Count, Q, Sum

ORDER_ID = re.compile(r"ord_[A-Za-z0-9]{20}")
SEPARATOR = "-" * 79


def confirmation_mails(mail_dir: Path) -> Counter[str]:
    """Order id → number of confirmation e-mails written for it."""
    counts: Counter[str] = Counter()
    for path in sorted(mail_dir.glob("*.log")):
        for chunk in path.read_text(errors="replace").split(SEPARATOR):
            if not chunk.strip():
                continue
            message = email.message_from_string(chunk.strip() + "\n")
            subject = str(email.header.make_header(email.header.decode_header(message.get("Subject", ""))))
            if subject.endswith("confirmed"):
                counts.update(ORDER_ID.findall(subject)[:1])
    return counts


def main(run_dir: str) -> int:
    from catalog.models import Row
    from config.core.models import MailOnce
    from orders.models import Order, OrderStatusHistory
    from orders.seller_mail import CONFIRMATION_MAIL
    from payouts.models import Charge
    from quotes.models import Quote

    run = Path(run_dir)
    expected = json.loads((run / "expected.json").read_text())
    S = Order.Status
    created = expected["created_orders"]  # order ids the clients got a 201 for
    problems: list[str] = []

    # 1. Every 201 order exists exactly once, and no order exists that no client was told about.
    in_db = Counter(Order.objects.values_list("order_id", flat=True))
    told = Counter(created)
    if any(n > 1 for n in told.values()):
        problems.append(f"an order id was returned twice: {[k for k, n in told.items() if n > 1][:5]}")
    if set(in_db) != set(told):
        problems.append(
            f"orders answered 201 but missing: {sorted(set(told) - set(in_db))[:5]}; "
            f"orders nobody was told about: {sorted(set(in_db) - set(told))[:5]}"
        )

    # 2. Every quote consumed at most once: one order per consumed quote, and no consumed quote without one.
    consumed = Quote.objects.filter(consumed_at__isnull=False)
    doubly = Order.objects.values("quote_id").annotate(n=Count("id")).filter(n__gt=1).count()
    orphan = consumed.filter(order__isnull=True).count()
    unconsumed_with_order = Order.objects.filter(quote__consumed_at__isnull=True).count()
    if doubly or orphan or unconsumed_with_order or consumed.count() != Order.objects.count():
        problems.append(
            f"quote consumption: {doubly} quotes with several orders, {orphan} consumed quotes without an "
            f"order, {unconsumed_with_order} orders on unconsumed quotes"
        )
    races = expected["double_submits"]
    # One wins and the other is told the quote is used, or the row ran out and both are told so.
    allowed = (
        ["201", "422 QUOTE_ALREADY_CONSUMED"],
        ["422 INSUFFICIENT_QUANTITY", "422 INSUFFICIENT_QUANTITY"],
    )
    bad_races = [r for r in races if r["answers"] not in allowed]
    if bad_races:
        problems.append(f"double submits of one quote answered otherwise: {bad_races[:5]}")

    # 3. No row oversold: what is left is what there was minus what live orders hold, never below 0.
    holding = Q(orders__status__in=[S.ACCEPTED, S.AWAITING_TRANSFER, S.TICKET_RECEIVED, S.PAYOUT_IN_PROCESS,
                                    S.SCHEDULED, S.PAID])  # fmt: skip
    initial = {int(pk): qty for pk, qty in expected["initial_quantities"].items()}
    oversold = []
    for row in Row.objects.filter(pk__in=initial).annotate(held=Sum("orders__quantity", filter=holding)):
        held = row.held or 0
        if row.available_quantity < 0 or row.available_quantity != initial[row.pk] - held:
            oversold.append((row.pk, initial[row.pk], held, row.available_quantity))
    if oversold:
        problems.append(f"rows whose stock does not add up (pk, initial, held, left): {oversold[:5]}")
    sold_out = sum(1 for r in Row.objects.filter(pk__in=initial) if r.available_quantity == 0)

    # 4. Every order confirmed exactly once: one charge, one move to awaiting_transfer, one e-mail.
    confirms = Counter(
        OrderStatusHistory.objects.filter(from_status=S.ACCEPTED, to_status=S.AWAITING_TRANSFER).values_list(
            "order__order_id", flat=True
        )
    )
    charges = Counter(Charge.objects.values_list("order__order_id", flat=True))
    mails = confirmation_mails(run / "mail")
    still_accepted = Order.objects.filter(status=S.ACCEPTED).count()
    confirmed_ids = set(confirms)
    if still_accepted:
        problems.append(f"{still_accepted} orders still waiting for their confirmation")
    if any(n > 1 for n in confirms.values()):
        problems.append("an order was moved to awaiting_transfer more than once")
    if any(n > 1 for n in charges.values()) or set(charges) != confirmed_ids:
        problems.append(
            f"charges: {sum(n > 1 for n in charges.values())} orders charged twice, "
            f"{len(confirmed_ids - set(charges))} confirmed without a charge, "
            f"{len(set(charges) - confirmed_ids)} charged without a confirmation"
        )
    # An order canceled between its charge and its e-mail is (rightly) never mailed; every other is.
    mailed = MailOnce.objects.filter(purpose=CONFIRMATION_MAIL, sent_at__isnull=False).values_list(
        "key", flat=True
    )
    emailed = set(
        Order.objects.filter(pk__in=[int(key) for key in mailed]).values_list("order_id", flat=True)
    )
    live_confirmed = set(Order.objects.filter(status=S.AWAITING_TRANSFER).values_list("order_id", flat=True))
    if (
        any(n > 1 for n in mails.values())
        or set(mails) != emailed
        or not live_confirmed <= emailed <= confirmed_ids
    ):
        problems.append(
            f"e-mails: {sum(n > 1 for n in mails.values())} orders mailed twice, "
            f"{len(live_confirmed - set(mails))} confirmed orders without an e-mail, "
            f"{len(set(mails) ^ emailed)} differences between the mails written and the orders marked mailed"
        )
    canceled_unconfirmed_charged = (
        Order.objects.filter(status=S.CANCELED, charge__isnull=False)
        .exclude(order_id__in=confirmed_ids)
        .count()
    )
    if canceled_unconfirmed_charged:
        problems.append(f"{canceled_unconfirmed_charged} orders canceled before confirmation were charged")

    result = {
        "orders_answered_201": len(created),
        "orders_in_database": sum(in_db.values()),
        "quotes_created": Quote.objects.count(),
        "quotes_consumed": consumed.count(),
        "double_submits": len(races),
        "rows_checked": len(initial),
        "rows_sold_out": sold_out,
        "orders_confirmed": len(confirmed_ids),
        "orders_canceled": Order.objects.filter(status=S.CANCELED).count(),
        "charges": sum(charges.values()),
        "confirmation_emails": sum(mails.values()),
        "orders_still_accepted": still_accepted,
        "problems": problems,
    }
    print("SOAKCHECK " + json.dumps(result))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
