"""Staff admin for the catalog: search, filters, sections and rows inline, canceling events, and
adjusting a row's quantity.

Edits to prices apply to quotes made afterwards: existing quotes keep their snapshot. Event saves go through
``catalog.services`` so the local ``event_date`` follows ``starts_at``. A row's quantity is read-only once
the row exists (orders change it while a page is open); staff correct it with an explicit, relative
adjustment with a reason ("Adjust quantity"), recorded and listed on the row and its event.
"""

from . import events, rows

__all__ = ["events", "rows"]
