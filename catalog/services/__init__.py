"""Every write on the catalog (STYLE: services).

- ``events``: venues, performers, events (with their local date), the one writer of an event's status
  (``event_transition``), rows' descriptions;
- ``imports``: catalog imports from files;
- ``quantities``: the one writer of a row's available quantity (orders, cancels, expiries, staff
  adjustments), always relative.
"""

from .events import (
    EVENT_TRANSITIONS,
    catalog_changed,
    event_cancel,
    event_create,
    event_insert,
    event_save,
    event_transition,
    local_event_date,
    performers_get_or_create,
    row_save,
    row_upsert,
    venue_get_or_create,
)
from .imports import ImportReport, catalog_import
from .quantities import (
    QuantityAdjustmentRefused,
    row_can_take_sql,
    row_quantity_adjust,
    row_quantity_release,
    row_quantity_take,
    row_quantity_taken,
    row_take_sql,
)

__all__ = [
    "EVENT_TRANSITIONS",
    "ImportReport",
    "QuantityAdjustmentRefused",
    "catalog_changed",
    "catalog_import",
    "event_cancel",
    "event_create",
    "event_insert",
    "event_save",
    "event_transition",
    "local_event_date",
    "performers_get_or_create",
    "row_can_take_sql",
    "row_quantity_adjust",
    "row_quantity_release",
    "row_quantity_take",
    "row_quantity_taken",
    "row_save",
    "row_take_sql",
    "row_upsert",
    "venue_get_or_create",
]
