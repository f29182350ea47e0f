"""``{{ event|venue_time:"M j, Y H:i T" }}``: an event's start as its venue's local date and time, whatever zone
the page is rendered in (the portal activates the partner's). It is the date and time the API
(``event_date``, ``event_datetime_local``), the CSV exports, the admin and the e-mails give: one date per
event everywhere."""

from django import template
from django.utils import dateformat

from catalog.models import Event

register = template.Library()

DEFAULT_FORMAT = "M j, Y H:i T"


@register.filter
def venue_time(event: Event, format: str = DEFAULT_FORMAT) -> str:
    # ``date`` would move an aware datetime into the page's zone first: format it in the event's own zone.
    return dateformat.format(event.venue_starts_at, format)
