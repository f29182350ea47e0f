"""A third ticketing platform for the template tests, "BleacherBox": its own domain, DKIM key and selector, and
a multipart text and HTML transfer mail whose values sit where real platforms put them — the seller's sentence
("Maria Gonzalez sent you 2 tickets to …"), an "EVENT DETAILS" block without labels, a padded table of
Section / Row / Seats / Quantity without colons, and a ticket line with its labels mid-line
("Sec 114 | Row 12 | Seats 5, 6"). The subject names the seller too.
"""

from __future__ import annotations

import secrets
from email.message import EmailMessage
from email.utils import format_datetime

from django.utils import timezone

from orders.models import Order
from tests.transfers.staff import stagepass

PLATFORM = "bleacherbox"
DOMAIN = "notify.bleacherbox-tickets.com"
SELECTOR = "bbx2026"
ACCEPT_HOST = "claim.bleacherbox-tickets.com"
REGISTRY = {
    **stagepass.REGISTRY,
    "platform": PLATFORM,
    "sender_domains": [DOMAIN],
    "accept_link_hosts": [ACCEPT_HOST],
}
EVENT = "Chiefs vs Raiders"
VENUE = "GEHA Field at Arrowhead Stadium"


def bleacherbox_mail(
    order: Order, *, seller: str = "Maria Gonzalez", seats: list[str] | None = None, repeats: int = 1
) -> bytes:
    """BleacherBox's transfer e-mail to ``order`` (unsigned): text and HTML alternatives; ``repeats``: how many
    times the seller's sentence stands (a hostile mail repeats it without end)."""
    event = order.event
    starts = event.venue_starts_at
    when = f"{starts:%a, %b} {starts.day}, {starts:%Y} {int(starts.strftime('%I'))}:{starts:%M %p}"
    seats = seats or [str(n) for n in range(5, 5 + order.quantity)]
    listed = ", ".join(seats)
    token = secrets.token_urlsafe(12)
    link = f"https://{ACCEPT_HOST}/t/{token}"
    section, row = order.section_name, order.row_name
    text = "\n".join(
        [
            "BleacherBox",
            "",
            "Hello,",
            "",
            *[f"{seller} sent you {order.quantity} tickets to {event.name}."] * (repeats - 1),
            f"{seller} sent you {order.quantity} tickets to {event.name}. Accept them before the event to add "
            "them to your BleacherBox wallet.",
            "",
            "EVENT DETAILS",
            event.name,
            f"{event.venue.name}, Kansas City, MO",
            when,
            "",
            "YOUR TICKETS",
            f"{'Section':<12}{section}",
            f"{'Row':<12}{row}",
            f"{'Seats':<12}{listed}",
            f"{'Quantity':<12}{order.quantity}",
            "",
            f"Sec {section} | Row {row} | Seats {listed}",
            "",
            f"Accept your tickets: {link}",
            "",
            f"Need help? https://help.bleacherbox-tickets.com/hc/{token}",
            "BleacherBox LLC, 1 Stadium Way, Kansas City, MO 64129",
        ]
    )
    html = (
        "<html><body><h1>BleacherBox</h1><p>Hello,</p>"
        f"<p>{seller} sent you {order.quantity} tickets to <b>{event.name}</b>.</p>"
        f"<h2>EVENT DETAILS</h2><p>{event.name}<br>{event.venue.name}, Kansas City, MO<br>{when}</p>"
        "<table><tr><th>Section</th><th>Row</th><th>Seats</th><th>Quantity</th></tr>"
        f"<tr><td>{section}</td><td>{row}</td><td>{listed}</td><td>{order.quantity}</td></tr></table>"
        f'<p><a href="{link}">Accept your tickets</a></p></body></html>'
    )
    message = EmailMessage()
    message["From"] = f"BleacherBox <tickets@{DOMAIN}>"
    message["To"] = order.transfer_address
    message["Subject"] = f"{seller} sent you tickets to {event.name}"
    message["Date"] = format_datetime(timezone.now())
    message["Message-ID"] = f"<{secrets.token_hex(12)}@{DOMAIN}>"
    message.set_content(text)
    message.add_alternative(html, subtype="html")
    return message.as_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
