"""Query validation and response shapes of the catalog endpoints (docs/partners/catalog-and-quotes.md "Catalog").

Responses are built by the small ``*_data`` functions (plain dicts, cheap on the hot list path); the
Serializer classes below describe the same shapes for the OpenAPI schema, and a test holds the two equal.
"""

from decimal import Decimal
from typing import Any

from rest_framework import serializers

from config.api.envelope import utc_iso
from config.api.pagination import PageParamsSerializer

CENTS = Decimal("0.01")


def money_number(value: Decimal | None) -> Decimal | None:
    """A price rendered as a JSON number with at most two decimals (the JSON encoder writes Decimals)."""
    return None if value is None else value.quantize(CENTS)


def money_string(value: Decimal) -> str:
    """A price as a string with exactly two decimals, e.g. ``"123.00"``."""
    return str(value.quantize(CENTS))


# --- query parameters -----------------------------------------------------------------------------------
class EventListParamsSerializer(PageParamsSerializer):
    q = serializers.CharField(
        required=False,
        max_length=200,
        help_text="Case-insensitive substring of the event name, venue name, performer name or city.",
    )
    venue_id = serializers.CharField(required=False, max_length=32, help_text="Exact venue id (`ven_…`).")
    venue_name = serializers.CharField(
        required=False, max_length=200, help_text="Case-insensitive substring of the venue name."
    )
    performer_id = serializers.CharField(
        required=False, max_length=32, help_text="Exact performer id (`prf_…`)."
    )
    performer_name = serializers.CharField(
        required=False, max_length=200, help_text="Case-insensitive substring of a performer's name."
    )
    city = serializers.CharField(
        required=False, max_length=120, help_text="City, case-insensitive exact match."
    )
    primary_site = serializers.CharField(
        required=False,
        max_length=32,
        help_text="Primary ticketing platform, case-insensitive exact match (e.g. `ticketmaster`).",
    )
    date_from = serializers.DateField(
        required=False,
        input_formats=["%Y-%m-%d"],
        help_text=(
            "YYYY-MM-DD, inclusive, on the venue-local `event_date`. Without it only events that have not "
            "started are listed; with it every event from that date on is listed, past ones included."
        ),
    )
    date_to = serializers.DateField(
        required=False, input_formats=["%Y-%m-%d"], help_text="YYYY-MM-DD, inclusive, on `event_date`."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        date_from, date_to = attrs.get("date_from"), attrs.get("date_to")
        if date_from and date_to and date_to < date_from:
            raise serializers.ValidationError(
                {"date_to": serializers.ErrorDetail("date_to is before date_from.", code="invalid")}
            )
        return {k: v for k, v in attrs.items() if v not in ("", None)}


# --- response data --------------------------------------------------------------------------------------
def event_data(event, performers: list[tuple[str, str]]) -> dict[str, Any]:
    venue = event.venue
    return {
        "event_id": event.event_id,
        "event_name": event.name,
        "event_datetime_utc": utc_iso(event.starts_at),
        "event_datetime_local": event.local_starts_at.strftime("%Y-%m-%dT%H:%M:%S"),
        "event_timezone": event.timezone,
        "event_date": event.event_date.isoformat(),
        "venue": {
            "venue_id": venue.venue_id,
            "venue_name": venue.name,
            "city": venue.city,
            "state": venue.state,
            "country": venue.country,
        },
        "performers": [{"performer_id": pid, "performer_name": name} for pid, name in performers],
        "primary_site": event.primary_site,
        "status": event.status,
    }


def section_data(section) -> dict[str, Any]:
    return {
        "section_name": section.name,
        "section_name_display": section.name_display,
        "general_admission": section.general_admission,
        "available_quantity": int(section.total_available or 0),
        "min_offer_price": money_number(section.min_offer_price),
    }


def row_data(row) -> dict[str, Any]:
    return {
        "row_name": row.name,
        "row_name_display": row.name_display,
        "available_quantity": row.available_quantity,
        "offer_price": money_number(row.offer_price),
        "face_value": money_string(row.face_value),
        "restrictions": list(row.restrictions or []),
        "restriction_detail": row.restriction_detail,
    }


# --- schema descriptions ----------------------------------------------------------------------------------
class VenueSerializer(serializers.Serializer):
    venue_id = serializers.CharField(help_text="`ven_…`")
    venue_name = serializers.CharField()
    city = serializers.CharField()
    state = serializers.CharField(help_text="State, province or region; may be empty.")
    country = serializers.CharField(help_text="ISO 3166-1 alpha-2.")


class PerformerSerializer(serializers.Serializer):
    performer_id = serializers.CharField(help_text="`prf_…`")
    performer_name = serializers.CharField()


class EventSerializer(serializers.Serializer):
    event_id = serializers.CharField(help_text="`evt_…`")
    event_name = serializers.CharField()
    event_datetime_utc = serializers.DateTimeField(help_text="Start, UTC ISO 8601 with `Z`.")
    event_datetime_local = serializers.CharField(
        help_text="Start on the venue's wall clock, `YYYY-MM-DDTHH:MM:SS`, no zone designator."
    )
    event_timezone = serializers.CharField(help_text="IANA time zone name, e.g. `America/New_York`.")
    event_date = serializers.DateField(help_text="The venue-local date of the start.")
    venue = VenueSerializer()
    performers = PerformerSerializer(many=True)
    primary_site = serializers.CharField(help_text="Primary ticketing platform, e.g. `ticketmaster`.")
    status = serializers.ChoiceField(choices=["scheduled", "canceled"])


class SectionSerializer(serializers.Serializer):
    section_name = serializers.CharField(help_text="Use URL-encoded in the rows path and in quotes.")
    section_name_display = serializers.CharField()
    general_admission = serializers.BooleanField()
    available_quantity = serializers.IntegerField(help_text="Tickets the service still buys, all rows.")
    min_offer_price = serializers.DecimalField(
        max_digits=10,
        decimal_places=2,
        allow_null=True,
        coerce_to_string=False,
        help_text="Lowest per-ticket offer (USD) among rows with quantity available; null if none.",
    )


class RowSerializer(serializers.Serializer):
    row_name = serializers.CharField()
    row_name_display = serializers.CharField()
    available_quantity = serializers.IntegerField(help_text="Tickets the service still buys in this row.")
    offer_price = serializers.DecimalField(
        max_digits=10, decimal_places=2, coerce_to_string=False, help_text="Per ticket, USD (JSON number)."
    )
    face_value = serializers.CharField(help_text='Per ticket, USD, two decimals as a string ("85.00").')
    restrictions = serializers.ListField(
        child=serializers.CharField(), help_text="Restriction labels; empty if none."
    )
    restriction_detail = serializers.CharField(allow_null=True, help_text="Short note; null if none.")


def page_serializer(name: str, item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    return type(
        name,
        (serializers.Serializer,),
        {
            "results": item(many=True),
            "has_more": serializers.BooleanField(),
            "next_cursor": serializers.CharField(
                allow_null=True, help_text="Pass as `cursor` for the next page; null on the last page."
            ),
            "__module__": __name__,
        },
    )


EventPageSerializer = page_serializer("EventPage", EventSerializer)
SectionPageSerializer = page_serializer("SectionPage", SectionSerializer)
RowPageSerializer = page_serializer("RowPage", RowSerializer)
