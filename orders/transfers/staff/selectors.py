"""What the staff pages of transfer detection read beyond a ``.get()``: an order's open cases and the accept
links its evidence carries (the order page's transfer panel and the bulk acceptance's confirmation)."""

from __future__ import annotations

from collections.abc import Iterable

from orders.models import Order
from orders.transfers.models import TransferCase, TransferEvidence


def order_open_cases(*, order: Order) -> list[TransferCase]:
    """The order's cases still open or in review, oldest first."""
    return list(
        TransferCase.objects.filter(order=order, state__in=TransferCase.OPEN_STATES).order_by(
            "created_at", "id"
        )
    )


def orders_accept_links(*, orders: Iterable[Order]) -> dict[int, list[str]]:
    """Each order's accept links, from its evidence, oldest first and without repeats."""
    links: dict[int, list[str]] = {}
    rows = TransferEvidence.objects.filter(order__in=[o.pk for o in orders]).exclude(accept_link="")
    for order_pk, link in rows.order_by("created_at", "id").values_list("order_id", "accept_link"):
        if link not in links.setdefault(order_pk, []):
            links[order_pk].append(link)
    return links
