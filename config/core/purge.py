"""Deleting old rows in batches: each batch is a short transaction, so a purge never holds long locks.

The one way the retention purges (notifications, idempotency keys, quotes, webhook deliveries) delete.
"""

from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet


def delete_in_batches(
    candidates: QuerySet,
    *,
    batch_size: int = 1000,
    max_batches: int | None = None,
    recheck: Q | None = None,
    before_delete: Callable[[Sequence[Any]], object] | None = None,
) -> int:
    """Delete the rows of ``candidates`` ``batch_size`` primary keys at a time until none is left.

    Each batch selects the next keys (in the queryset's order), then deletes them in its own transaction:
    first what ``before_delete(pks)`` deletes (rows that go with them), then the rows themselves, kept if
    they no longer match ``recheck`` (a row that changed since the SELECT, say a quote consumed meanwhile).
    A batch shorter than ``batch_size`` is the last; ``max_batches`` bounds one run. Returns the number of
    rows of the queryset's model deleted.
    """
    model = candidates.model
    deleted = 0
    batches = 0
    while max_batches is None or batches < max_batches:
        pks = list(candidates.values_list("pk", flat=True)[:batch_size])
        if not pks:
            break
        batches += 1
        rows = model._default_manager.filter(pk__in=pks)
        if recheck is not None:
            rows = rows.filter(recheck)
        with transaction.atomic():
            if before_delete is not None:
                before_delete(pks)
            deleted += rows.delete()[1].get(model._meta.label, 0)
        if len(pks) < batch_size:
            break
    return deleted
