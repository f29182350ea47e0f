"""Every write on the catalog (STYLE: services).

- ``events``: venues, performers, events (with their local date), cancellation, rows' descriptions;
- ``imports``: catalog imports from files;
- ``quantities``: the one writer of a row's available quantity (orders, cancels, expiries, staff
  adjustments), always relative.
"""

from .events import (
    catalog_changed,
    event_cancel,
    event_create,
    event_save,
    local_event_date,
    performers_get_or_create,
    row_save,
    row_upsert,
    venue_get_or_create,
)
from .imports import ImportReport, catalog_import
from .quantities import (
    QuantityAdjustmentRefused,
    row_quantity_adjust,
    row_quantity_release,
    row_quantity_take,
)

__all__ = [
    "ImportReport",
    "QuantityAdjustmentRefused",
    "catalog_changed",
    "catalog_import",
    "event_cancel",
    "event_create",
    "event_save",
    "local_event_date",
    "performers_get_or_create",
    "row_quantity_adjust",
    "row_quantity_release",
    "row_quantity_take",
    "row_save",
    "row_upsert",
    "venue_get_or_create",
]
