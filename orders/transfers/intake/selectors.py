"""What the intake stage reads for the doors and the staff pages: which order a transfer address belongs to
while it takes mail, and a stored message's raw bytes."""

from __future__ import annotations

from django.conf import settings
from django.core.files.storage import default_storage

from orders.models import Order
from orders.transfers.models import InboundMessage

S = Order.Status
# The statuses whose transfer address takes mail (docs/operations/receiving-mail.md "Transfer detection"): the order still waits
# for its tickets, or its received transfer may still be accepted on the platform or recalled by the seller.
RECEIVING_STATUSES = (S.ACCEPTED, S.AWAITING_TRANSFER, S.TICKET_RECEIVED, S.PAYOUT_IN_PROCESS, S.SCHEDULED)


def normalise_address(address: str) -> str:
    address = (address or "").strip().strip("<>").strip()
    local, _, domain = address.rpartition("@")
    return f"{local.lower()}@{domain.lower()}" if local else address.lower()


def recipient_order(address: str) -> Order | None:
    """The order whose transfer address this is, if the address takes mail now (else the receiver says 550)."""
    address = normalise_address(address)
    if not address.endswith("@" + settings.ORDER_TRANSFER_ADDRESS_DOMAIN.lower()):
        return None
    return Order.objects.filter(transfer_address=address, status__in=RECEIVING_STATUSES).first()


def raw_read(message: InboundMessage) -> bytes | None:
    """The raw bytes of ``message``; ``None`` once purged (or never stored: a provider gave no raw MIME)."""
    if not message.raw.name:
        return None
    try:
        with default_storage.open(message.raw.name, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
