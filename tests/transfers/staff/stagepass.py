"""A second ticketing platform for the template tests, "StagePass": its own domain and DKIM key (made in the
test, published by a test resolver), and mail in its own format — the way a real platform writes it (a
marketing header, the event block without labels, section/row/seats on one line, a US-style date, a
tracking link beside the accept link), nothing like the sandbox's "Label: value" lines.

Its registry entry (sender domains, accept-link hosts) is made the way staff make one: a version proposed by
one staff member and approved by another (``registry_entry``); its mail opens ``unparsed`` cases until a
template is activated.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from email.utils import format_datetime

from django.utils import timezone

from orders.models import Order

PLATFORM = "stagepass"
DOMAIN = "mail.stagepass-tickets.com"
ACCEPT_HOST = "accept.stagepass-tickets.com"
SENDER = f"StagePass <transfers@{DOMAIN}>"
REGISTRY = {
    "platform": PLATFORM,
    "sender_domains": [DOMAIN],
    "accept_link_hosts": [ACCEPT_HOST],
    "static_barcodes": False,
    "kinds": {},
}


def stagepass_mail(
    order: Order,
    *,
    canceled: bool = False,
    seats: list[str] | None = None,
    seller: str = "Jordan Avery",
    date: datetime | None = None,
) -> bytes:
    """StagePass's transfer e-mail to ``order`` (unsigned, CRLF); ``canceled``: its cancel notice, which
    carries the same block of event, seats and count."""
    event = order.event
    starts = event.venue_starts_at
    hour = int(starts.strftime("%I"))
    when = f"{starts:%a, %b} {starts.day}, {starts:%Y} {hour}:{starts:%M %p}"
    seats = seats or [str(n) for n in range(1, order.quantity + 1)]
    token = secrets.token_urlsafe(12)
    subject = f"Ticket transfer: {order.quantity} tickets for {event.name}"
    if canceled:
        subject += " — canceled"
        opening = (
            f"{seller} canceled the transfer of {order.quantity} tickets. They are no longer yours to accept."
        )
        action = f"Manage your tickets: https://{ACCEPT_HOST}/account/{token}"
    else:
        opening = (
            f"{seller} sent you {order.quantity} tickets. Accept them to add them to your StagePass account."
        )
        action = f"Accept tickets: https://{ACCEPT_HOST}/claim/{token}"
    body = "\r\n".join(
        [
            "StagePass",
            "",
            "Hi,",
            "",
            opening,
            "",
            "EVENT",
            event.name,
            event.venue.name,
            when,
            "",
            f"Section {order.section_name} · Row {order.row_name} · Seats {', '.join(seats)}",
            f"Tickets in this transfer: {order.quantity}",
            "",
            action,
            "",
            f"Questions? https://help.stagepass-tickets.com/t/{token}",
            "StagePass Inc., 500 Market St, San Francisco",
        ]
    )
    headers = [
        ("From", SENDER),
        ("To", order.transfer_address),
        ("Subject", subject),
        ("Date", format_datetime(date or timezone.now())),
        ("Message-ID", f"<{secrets.token_hex(12)}@{DOMAIN}>"),
        ("MIME-Version", "1.0"),
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Transfer-Encoding", "8bit"),
    ]
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    return (head + "\r\n" + body + "\r\n").encode()
