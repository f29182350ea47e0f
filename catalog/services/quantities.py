"""The one writer of a row's ``available_quantity`` once the row exists
(docs/partners/catalog-and-quotes.md "Catalog › Availability and freshness").

Every change is relative (an ``F()`` update computed by the database), so no writer ever puts back a figure
it read earlier: an order taken between a staff member opening a page and saving it stays taken. Each change
tells the read API after commit, so the next read of the event's sections and rows, in any web process,
shows the new quantity. An order on PostgreSQL takes its quantity inside its own single statement, with the
decrement written here (``row_take_sql``) and told here (``row_quantity_taken``).
"""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .. import cache as catalog_cache
from ..models import Row, RowQuantityAdjustment


class QuantityAdjustmentRefused(Exception):
    """A staff adjustment that cannot apply; the message says why, for the person who asked."""


def _availability_changed_on_commit(*, row_pk: int, event_id: str | None = None) -> None:
    if event_id is None:
        event_id = (
            Row.objects.filter(pk=row_pk).order_by().values_list("section__event__event_id", flat=True)[:1]
        )
        event_id = next(iter(event_id), None)
    if event_id is not None:
        transaction.on_commit(lambda: catalog_cache.availability_changed(event_ids={event_id}))


def row_take_sql(*, only_if: str = "") -> str:
    """:func:`row_quantity_take`'s conditional decrement as SQL, for a caller that runs it inside one
    statement of its own (the order's creation on PostgreSQL: a data-modifying ``WITH``). Parameters: the
    quantity, the row's pk, the quantity again. ``only_if``: one more SQL condition (the caller's own, with
    no parameter). It returns the row's id when it took the quantity, nothing when the row has fewer left.
    The caller then calls :func:`row_quantity_taken` (a taken quantity must reach the read API)."""
    table = Row._meta.db_table
    condition = f" AND {only_if}" if only_if else ""
    # Race: orders for different quotes on one row — the conditional decrement never oversells.
    return (
        f"UPDATE {table} SET available_quantity = available_quantity - %s"  # noqa: S608 - names from the model
        f" WHERE id = %s AND available_quantity >= %s{condition} RETURNING id"
    )


def row_can_take_sql(*, only_if: str = "") -> str:
    """:func:`row_take_sql`'s check without the decrement, for a statement that must not change the row (a
    test-mode order). Parameters: the row's pk, the quantity. It returns the row's id when the row has the
    quantity left, nothing otherwise."""
    condition = f" AND {only_if}" if only_if else ""
    return (
        f"SELECT id FROM {Row._meta.db_table}"  # noqa: S608 - names from the model
        f" WHERE id = %s AND available_quantity >= %s{condition}"
    )


def row_quantity_taken(*, event_id: str) -> None:
    """A caller's own statement (:func:`row_take_sql`) took quantity from a row of this event: the next read of
    its sections and rows, in any web process, shows it once the change commits (at once outside a
    transaction)."""
    transaction.on_commit(lambda: catalog_cache.availability_changed(event_ids={event_id}))


# No savepoint: inside the caller's transaction (an order's), the change is one more statement of it.
@transaction.atomic(savepoint=False)
def row_quantity_take(*, row_pk: int, quantity: int, event_id: str | None = None) -> bool:
    """Take ``quantity`` tickets of the row's capacity; False (nothing taken) if it has fewer left.

    ``event_id``: the row's event (``evt_…``), when the caller knows it, saves looking it up."""
    if quantity <= 0:
        raise ValueError(f"quantity must be positive, not {quantity}")
    # Race: orders for different quotes on one row — the conditional decrement never oversells.
    taken = Row.objects.filter(pk=row_pk, available_quantity__gte=quantity).update(
        available_quantity=F("available_quantity") - quantity
    )
    if taken:
        _availability_changed_on_commit(row_pk=row_pk, event_id=event_id)
    return bool(taken)


# No savepoint: inside the caller's transaction (an order's), the change is one more statement of it.
@transaction.atomic(savepoint=False)
def row_quantity_release(*, row_pk: int, quantity: int) -> None:
    """Give ``quantity`` tickets back to the row (a canceled or expired order)."""
    if quantity <= 0:
        raise ValueError(f"quantity must be positive, not {quantity}")
    # Relative: releases and takes of other orders on this row interleave without losing either.
    if Row.objects.filter(pk=row_pk).update(available_quantity=F("available_quantity") + quantity):
        _availability_changed_on_commit(row_pk=row_pk)


@transaction.atomic
def row_quantity_adjust(*, row_pk: int, delta: int, reason: str, actor: str) -> RowQuantityAdjustment:
    """A staff correction of the row's capacity by ``delta`` tickets (+ or −), recorded with its reason.

    Applied relative to the quantity at the moment it commits, so it never undoes orders taken meanwhile.
    Refused (``QuantityAdjustmentRefused``, nothing written) when ``delta`` is 0, the reason is empty, the
    row does not exist, or a negative ``delta`` would drive the quantity below zero.
    """
    reason = (reason or "").strip()
    if not reason:
        raise QuantityAdjustmentRefused("Give a reason for the adjustment.")
    if delta == 0:
        raise QuantityAdjustmentRefused("An adjustment of 0 changes nothing.")
    # Race: an order taking tickets while staff remove some — the condition is checked by the UPDATE
    # itself under the row lock, so the two can never together go below zero.
    changed = Row.objects.filter(pk=row_pk, available_quantity__gte=max(0, -delta)).update(
        available_quantity=F("available_quantity") + delta
    )
    if not changed:
        available = Row.objects.filter(pk=row_pk).values_list("available_quantity", flat=True).first()
        if available is None:
            raise QuantityAdjustmentRefused("The row no longer exists.")
        raise QuantityAdjustmentRefused(
            f"Cannot remove {-delta} tickets: the row has only {available} available."
        )
    # The UPDATE holds the row lock until commit, so this is the quantity our change left.
    after = Row.objects.filter(pk=row_pk).values_list("available_quantity", flat=True).get()
    adjustment = RowQuantityAdjustment.objects.create(
        row_id=row_pk,
        delta=delta,
        reason=reason[:500],
        actor=actor[:200],
        at=timezone.now(),
        quantity_after=after,
    )
    _availability_changed_on_commit(row_pk=row_pk)
    return adjustment
