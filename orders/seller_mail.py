"""E-mails to the seller about an order, rendered from ``templates/emails/`` (text and HTML)."""

import functools
from datetime import date

from django.conf import settings
from django.utils import formats, translation

from config.core.mail import send_templated_mail

from .models import Order

# The seller's confirmation in the e-mails sent at most once (``config.core.mail_once``), keyed by the order's pk.
CONFIRMATION_MAIL = "order_confirmation"


# What a confirmation reads of its order (the recipient, the context, the templates, the Message-ID), for a batch
# that loads many orders at once: ``Order.objects.select_related(*CONFIRMATION_RELATED).only(*CONFIRMATION_FIELDS)``.
CONFIRMATION_RELATED = ("partner", "event__venue", "quote")
CONFIRMATION_FIELDS = (
    "order_id",
    "livemode",
    "quantity",
    "section_name_display",
    "row_name_display",
    "general_admission",
    "primary_site",
    "delivery_type",
    "in_hand_date",
    "transfer_address",
    "seller_email",
    "seller_name",
    "partner__name",
    "partner__contact_email",
    "event__name",
    "event__starts_at",
    "event__timezone",
    "event__venue__name",
    "event__venue__city",
    "event__venue__state",
    "event__venue__country",
    "quote__user_metadata",
)


def seller_recipient(order: Order) -> str:
    """seller_email, else the quote's ``user_metadata.email``, else the partner's contact e-mail
    (docs/partners/orders.md "Confirmation, and what happens when the broker or the database fails").

    A test-mode order never e-mails the seller: its messages go to the partner's contact e-mail."""
    if not order.livemode:
        return order.partner.contact_email or ""
    if order.seller_email:
        return order.seller_email
    metadata = order.quote.user_metadata if isinstance(order.quote.user_metadata, dict) else {}
    email = metadata.get("email")
    if isinstance(email, str) and email.strip():
        return email.strip()
    return order.partner.contact_email or ""


def _seller_name(order: Order) -> str:
    if order.seller_name:
        return order.seller_name
    metadata = order.quote.user_metadata if isinstance(order.quote.user_metadata, dict) else {}
    first = metadata.get("first_name")
    return first.strip() if isinstance(first, str) else ""


# The dates the e-mails show, as the template filter ``date`` writes them.
LONG_DATE = "l, F j, Y"
TIME_OF_DAY = "g:i A"


@functools.lru_cache(maxsize=4096)
def _formatted(value: date, form: str, language: str | None) -> str:
    return formats.date_format(value, form)


def dates_shown(value: date | None, form: str) -> str:
    """``value`` as ``{{ value|date:form }}`` shows it ("" for none), formatted once per value, form and language:
    a confirmation batch e-mails many orders of the same event, and Django's formatting looks up each name's
    translation every time."""
    if value is None:
        return ""
    return _formatted(value, form, translation.get_language())


@functools.lru_cache(maxsize=1024)
def _number(value: int, language: str | None) -> str:
    return formats.localize(value)


def number_shown(value: int) -> str:
    """``value`` as ``{{ value }}`` shows it, formatted once per value and language (Django's number formatting
    looks up the separators' settings and translations for every variable it writes)."""
    return _number(value, translation.get_language())


def _context(order: Order) -> dict:
    """What the seller's e-mails show, as plain values: the order, its event and its venue as dictionaries of
    the fields the templates read (a template looks a key up in a dictionary at once, where on a model it first
    fails an item lookup), and the quantity also as the text it is shown as (``quantity_shown``)."""
    event = order.event
    venue = event.venue
    local_starts_at = event.local_starts_at
    return {
        "order": {
            "order_id": order.order_id,
            "livemode": order.livemode,
            "quantity": order.quantity,  # for its filters (``pluralize``)
            "quantity_shown": number_shown(order.quantity),
            "section_name_display": order.section_name_display,
            "row_name_display": order.row_name_display,
            "general_admission": order.general_admission,
            "in_hand_date": order.in_hand_date,
            "transfer_address": order.transfer_address,
        },
        "event": {"name": event.name},
        "venue": {"name": venue.name},
        "venue_place": ", ".join(part for part in (venue.city, venue.state, venue.country) if part),
        "starts_on": dates_shown(local_starts_at, LONG_DATE),
        "starts_at_time": dates_shown(local_starts_at, TIME_OF_DAY),
        "deliver_by": dates_shown(order.in_hand_date, LONG_DATE),
        "event_timezone": event.timezone,
        "seller_name": _seller_name(order),
        "partner_name": order.partner.name,
        "delivery_type": order.delivery_type,
        "delivery_type_label": order.get_delivery_type_display(),
        "primary_site": order.primary_site,
        "support_email": settings.DEFAULT_FROM_EMAIL,
    }


def confirmation_message_id(order: Order) -> str:
    """The confirmation's Message-ID, derived from the order: any copy of it is recognisably the same e-mail."""
    return f"<confirmation.{order.order_id}@{settings.ORDER_TRANSFER_ADDRESS_DOMAIN}>"


def _send(
    *, template: str, subject: str, order: Order, to: str, headers: dict | None = None, connection=None
) -> None:
    send_templated_mail(
        template=template,
        subject=subject,
        to=to,
        context=_context(order),
        livemode=order.livemode,
        headers=headers,
        connection=connection,
    )


def send_order_confirmation(*, order: Order, to: str, connection=None) -> None:
    """The seller's confirmation (docs/partners/orders.md "Confirmation, and what happens when the broker or the database fails"): event details, what to deliver, how, by when, and where.

    ``connection``: an already opened mail connection (the sender opens it before the hand-over)."""
    subject = f"Your tickets for {order.event.name}: order {order.order_id} confirmed"
    _send(
        template="order_confirmation",
        subject=subject,
        order=order,
        to=to,
        headers={"Message-ID": confirmation_message_id(order)},
        connection=connection,
    )


def send_order_canceled(*, order: Order, to: str) -> None:
    """Tells a seller who was already asked to transfer the tickets that the order is off."""
    subject = f"Order {order.order_id} for {order.event.name} was canceled"
    _send(template="order_canceled", subject=subject, order=order, to=to)


def send_transfer_partial(*, order: Order, to: str, detected: int, seats: list[str]) -> None:
    """Part of the tickets arrived an hour ago and the rest did not: what is still missing, and where to send it."""
    subject = (
        f"Order {order.order_id}: {order.quantity - detected} of {order.quantity} tickets still to transfer"
    )
    send_templated_mail(
        template="transfer_partial",
        subject=subject,
        to=to,
        context={
            **_context(order),
            "detected": detected,
            "missing": order.quantity - detected,
            "seats": seats,
        },
        livemode=order.livemode,
    )


def send_transfer_reminder(*, order: Order, to: str, why: str) -> None:
    """The order waits for the tickets again (the transfer was recalled): the transfer address once more."""
    subject = f"Order {order.order_id}: please transfer your tickets for {order.event.name} again"
    send_templated_mail(
        template="transfer_reminder",
        subject=subject,
        to=to,
        context={**_context(order), "why": why},
        livemode=order.livemode,
    )
