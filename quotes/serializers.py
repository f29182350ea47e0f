"""Input validation and response shapes of the quote endpoints (docs/partners/catalog-and-quotes.md "Quotes")."""

from datetime import UTC
from decimal import Decimal
from typing import Any

from rest_framework import serializers

from catalog.serializers import money_number, money_string
from config.api.envelope import utc_iso
from config.api.validation import JSONBodySerializer, integer_as_given, text_as_given

from .codec import encode_quote_id
from .models import Quote
from .selectors import quote_order_id

MAX_QUANTITY = 50


class UserMetadataSerializer(JSONBodySerializer):
    first_name = serializers.CharField(required=False, allow_blank=True, max_length=100)
    last_name = serializers.CharField(required=False, allow_blank=True, max_length=100)
    email = serializers.EmailField(required=False, allow_blank=True, max_length=254)
    phone_number = serializers.CharField(required=False, allow_blank=True, max_length=32)


class QuoteCreateSerializer(JSONBodySerializer):
    event_id = serializers.CharField(max_length=32, help_text="Event id (`evt_…`).")
    section_name = serializers.CharField(max_length=100, help_text="Section name, as listed.")
    row_name = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=50,
        help_text="Row name; omit (or null) to get the best row: highest offer with enough quantity.",
    )
    quantity = serializers.IntegerField(min_value=1, max_value=MAX_QUANTITY, help_text="1–50 tickets.")
    user_metadata = UserMetadataSerializer(
        required=False,
        allow_null=True,
        help_text="The seller's contact details, kept with the quote for the transfer; never shown to "
        "another partner. Other keys are ignored.",
    )


_QUOTE_FIELDS = QuoteCreateSerializer().fields
_METADATA_FIELDS = tuple(_QUOTE_FIELDS["user_metadata"].fields.items())


def event_id_as_given(body: Any) -> str | None:
    """The event id QuoteCreateSerializer makes of ``body``'s ``event_id`` (stripped), when it would take it;
    ``None`` when it could refuse it."""
    return text_as_given(body.get("event_id"), _QUOTE_FIELDS["event_id"]) if type(body) is dict else None


def quote_body_valid(body: Any) -> dict[str, Any] | None:
    """What QuoteCreateSerializer validates ``body`` to, for a body it takes as it is; ``None`` when it could
    refuse it (then the serializer judges it and answers its errors). The fields' own limits are read."""
    if type(body) is not dict:
        return None
    fields = _QUOTE_FIELDS
    event_id = event_id_as_given(body)
    section_name = text_as_given(body.get("section_name"), fields["section_name"])
    quantity = integer_as_given(body.get("quantity"), fields["quantity"])
    if event_id is None or section_name is None or quantity is None:
        return None
    data: dict[str, Any] = {"event_id": event_id, "section_name": section_name}
    if "row_name" in body:
        row_name = body["row_name"]
        if row_name is not None:
            row_name = text_as_given(row_name, fields["row_name"])
            if row_name is None:
                return None
        data["row_name"] = row_name
    data["quantity"] = quantity
    if "user_metadata" in body:
        metadata = body["user_metadata"]
        if metadata is not None:
            if type(metadata) is not dict:
                return None
            given = {}
            for name, field in _METADATA_FIELDS:  # in the serializer's order; other keys are ignored
                if name in metadata:
                    text = text_as_given(metadata[name], field)
                    if text is None:
                        return None
                    given[name] = text
            metadata = given
        data["user_metadata"] = metadata
    return data


def exp_dt(value) -> str:
    """The shape of `exp_dt` (docs/partners/conventions.md "API conventions"): UTC, six fractional digits, no zone designator."""
    # isoformat, not strftime: glibc's %Y drops the leading zeros of years before 1000.
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def quote_data(
    quote: Quote, *, event_public_id: str, quote_id: str | None = None, with_order: bool = False
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "quote_id": quote_id or encode_quote_id(quote),
        "status": quote.status,
        "event_id": event_public_id,
        "event_name": quote.event_name,
        "section_name": quote.section_name,
        "section_name_display": quote.section_name_display,
        "row_name": quote.row_name,
        "row_name_display": quote.row_name_display,
        "quantity": quote.quantity,
        "general_admission": quote.general_admission,
        "offer_price": money_number(Decimal(quote.offer_price)),
        "total_price": money_number(Decimal(quote.total_price)),
        "face_value": money_string(Decimal(quote.face_value)),
        "currency": "USD",
        "expires_at": utc_iso(quote.expires_at),
        "exp_dt": exp_dt(quote.expires_at),
        "restrictions": list(quote.restrictions or []),
        "restriction_detail": quote.restriction_detail,
        "primary_site": quote.primary_site,
        "livemode": quote.livemode,
    }
    if with_order:
        data["order_id"] = quote_order_id(quote)
    return data


class QuoteSerializer(serializers.Serializer):
    """Schema of a quote (201 of POST /v1/quotes)."""

    quote_id = serializers.CharField(
        max_length=128,
        help_text="Encrypted quote id (`qte_…`), opaque, at most 128 characters (102 for a quote made now); "
        "give it to POST /v1/orders.",
    )
    status = serializers.ChoiceField(choices=["active", "consumed", "expired"])
    event_id = serializers.CharField()
    event_name = serializers.CharField()
    section_name = serializers.CharField()
    section_name_display = serializers.CharField()
    row_name = serializers.CharField()
    row_name_display = serializers.CharField()
    quantity = serializers.IntegerField()
    general_admission = serializers.BooleanField()
    offer_price = serializers.DecimalField(
        max_digits=10, decimal_places=2, coerce_to_string=False, help_text="Per ticket, USD (JSON number)."
    )
    total_price = serializers.DecimalField(
        max_digits=12, decimal_places=2, coerce_to_string=False, help_text="offer_price × quantity."
    )
    face_value = serializers.CharField(help_text='Per ticket, USD, two decimals as a string ("150.00").')
    currency = serializers.ChoiceField(choices=["USD"])
    expires_at = serializers.DateTimeField(help_text="When the locked price lapses, UTC with `Z`.")
    exp_dt = serializers.CharField(
        help_text="The same instant as expires_at: UTC, six fractional digits, no zone "
        "(`2026-12-01T18:30:00.000000`)."
    )
    restrictions = serializers.ListField(child=serializers.CharField())
    restriction_detail = serializers.CharField(allow_null=True)
    primary_site = serializers.CharField()
    livemode = serializers.BooleanField(
        help_text="false for a test-mode quote (made with a test-mode token); it can be ordered only in "
        "test mode."
    )


class QuoteDetailSerializer(QuoteSerializer):
    """Schema of GET /v1/quotes/{quote_id}."""

    order_id = serializers.CharField(
        allow_null=True, help_text="The order that used the quote (`ord_…`); null until consumed."
    )
