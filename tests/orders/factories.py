"""Test data for orders: the row the order tests quote (through the catalog's ``RowFactory``), and orders in
any status made the way the services make them."""

from datetime import timedelta
from decimal import Decimal

from catalog.models import Row
from config.core.models import MailOnce
from orders.models import Order
from orders.seller_mail import CONFIRMATION_MAIL
from orders.services import order_create, order_transition
from orders.transfers.decision.state import order_receive
from tests.catalog.factories import RowFactory
from tests.conftest import make_partner
from tests.quotes.factories import QuoteFactory, quote_token


def order_row(**overrides) -> Row:
    """A row of a new event, priced at 85.00 with one restriction, as the order tests expect."""
    values = {
        "name": "F",
        "name_display": "Row F",
        "available_quantity": 20,
        "offer_price": Decimal("85.00"),
        "face_value": Decimal("85.00"),
        "restrictions": ["Obstructed view"],
        "restriction_detail": "Partial view of the stage",
    }
    return RowFactory(**{**values, **overrides})


# The life cycle's path to each status (docs/partners/orders.md "Life cycle").
PATH = {
    "accepted": [],
    "awaiting_transfer": ["awaiting_transfer"],
    "ticket_received": ["awaiting_transfer", "ticket_received"],
    "payout_in_process": ["awaiting_transfer", "ticket_received", "payout_in_process"],
    "scheduled": ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled"],
    "paid": ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled", "paid"],
    "canceled": ["canceled"],
    "expired": ["awaiting_transfer", "expired"],
}


def make_order(
    partner,
    *,
    status: str = "accepted",
    quantity: int = 2,
    offer_price: Decimal = Decimal("85.00"),
    partner_reference: str = "",
) -> Order:
    """An order of ``partner`` created from a fresh quote, then walked to ``status`` through order_transition."""
    row = order_row(available_quantity=50, offer_price=offer_price)
    quote = QuoteFactory(partner=partner, row=row, quantity=quantity)
    order = order_of_quote(quote, partner_reference=partner_reference)
    # With transaction=True tests the confirmation ran on commit already: continue from where it is.
    order.refresh_from_db()
    steps = PATH[status]
    if order.status in steps:
        steps = steps[steps.index(order.status) + 1 :]
    for step in steps:
        if step == "ticket_received":
            # As staff record it: received and accepted on the platform, so the payout gate lets it through.
            order = order_receive(
                order=order, source="staff", actor="staff:test", reason="test setup", accepted=True
            )
            continue
        order = order_transition(order=order, to=step, actor="staff:test", reason="test setup")
    return order


def make_orders(count: int, *, partner=None, livemode: bool = True, seller_email: str = "") -> list[Order]:
    """``count`` orders just created (``accepted``, their confirmation not begun), on one row."""
    partner = partner or make_partner().partner
    row = order_row(available_quantity=10 * count + 10)
    orders = []
    for _ in range(count):
        quote = QuoteFactory(partner=partner, row=row, quantity=1, livemode=livemode)
        orders.append(order_of_quote(quote, seller_email=seller_email))
    return orders


def order_of_quote(quote, **fields) -> Order:
    """The order the partner of ``quote`` makes of it through the service: mobile transfer, not ready yet,
    in hand 7 days before the event, in the quote's mode (``fields`` override)."""
    values = {
        "partner_pk": quote.partner_id,
        "actor": f"partner:{quote.partner.public_id}",
        "quote_id": quote_token(quote),
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": False,
        "in_hand_date": quote.event.event_date - timedelta(days=7),
        "livemode": quote.livemode,
    }
    return order_create(**{**values, **fields})


def confirmation_mail(order: Order) -> MailOnce:
    """The order's confirmation e-mail as the e-mails sent at most once record it (an unsaved, empty record when
    nothing was recorded yet)."""
    return MailOnce.objects.filter(purpose=CONFIRMATION_MAIL, key=str(order.pk)).first() or MailOnce(
        purpose=CONFIRMATION_MAIL, key=str(order.pk)
    )


def confirmation_mailed(orders) -> set[int]:
    """The pks of ``orders`` whose confirmation e-mail is recorded as sent."""
    keys = MailOnce.objects.filter(
        purpose=CONFIRMATION_MAIL, key__in=[str(order.pk) for order in orders], sent_at__isnull=False
    ).values_list("key", flat=True)
    return {int(key) for key in keys}


def confirmation_mail_set(order: Order, **fields) -> None:
    """Write the order's confirmation e-mail record as a sender would have left it."""
    MailOnce.objects.update_or_create(purpose=CONFIRMATION_MAIL, key=str(order.pk), defaults=fields)
