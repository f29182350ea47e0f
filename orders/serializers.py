"""Input validation and output shapes of the orders API (docs/partners/orders.md "Orders")."""

from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.pagination import PageParamsSerializer
from config.api.validation import JSONBodySerializer

from . import errors
from .models import Order, OrderStatusHistory
from .uploads import is_pdf

EXP_DT_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


# --- input ------------------------------------------------------------------------------------------------
@extend_schema_field(OpenApiTypes.BOOL)
class FormBooleanField(serializers.Field):
    """A multipart boolean: ``true``/``false``/``1``/``0`` in any case; anything else is invalid."""

    default_error_messages = {"invalid": "Must be one of true, false, 1, 0."}
    _VALUES = {"true": True, "1": True, "false": False, "0": False}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and data.strip().lower() in self._VALUES:
            return self._VALUES[data.strip().lower()]
        self.fail("invalid")

    def to_representation(self, value):
        return bool(value)


class UploadField(serializers.FileField):
    """Any uploaded file: emptiness, size and content are judged by the order rules, in their order (docs/partners/orders.md "Ticket PDFs")."""

    def to_internal_value(self, data):
        if not (hasattr(data, "read") and hasattr(data, "size") and hasattr(data, "name")):
            self.fail("invalid")
        return data


# The delivery types that need no file (the schema's DeliveryTypeWithoutFileEnum).
DELIVERY_TYPES_WITHOUT_FILE = [t for t in Order.DeliveryType.values if t != Order.DeliveryType.PDF]


class OrderCreateSerializer(serializers.Serializer):
    """The form of ``POST /v1/orders`` (multipart/form-data)."""

    # The rules across fields, as the schema states them (config.api.schema.AutoSchema): in_hand_date when the
    # tickets are not ready (else IN_HAND_DATE_REQUIRED), a file for a pdf delivery (else FILE_REQUIRED).
    schema_rules = {
        "allOf": [
            {
                "anyOf": [
                    {"properties": {"is_ready_to_deliver": {"type": "boolean", "enum": [True]}}},
                    {"required": ["in_hand_date"]},
                ]
            },
            {
                "anyOf": [
                    {
                        "properties": {
                            "delivery_type": {"type": "string", "enum": DELIVERY_TYPES_WITHOUT_FILE}
                        }
                    },
                    {"required": ["file"]},
                ]
            },
        ]
    }

    quote_id = serializers.CharField(max_length=128, help_text="The encrypted quote id from quote creation.")
    delivery_type = serializers.ChoiceField(
        choices=Order.DeliveryType.choices,
        help_text="`mobile_transfer` (recommended), `mobile_qr` or `pdf`.",
    )
    is_ready_to_deliver = FormBooleanField(
        help_text="`true`: the tickets are ready now; `false`: they arrive by `in_hand_date`. "
        "Accepts true/false/1/0, in any case."
    )
    in_hand_date = serializers.DateField(
        required=False,
        input_formats=["%Y-%m-%d"],
        help_text="YYYY-MM-DD, the venue-local date the tickets reach the service. Required when "
        "is_ready_to_deliver is false; at most the event date minus 2 days; not in the past.",
    )
    file = UploadField(
        required=False,
        help_text="The tickets as one PDF (must start with `%PDF-`), at most 10 MB (10 485 760 bytes). "
        "Required when delivery_type is `pdf`.",
    )
    seller_email = serializers.EmailField(
        required=False,
        allow_blank=True,
        max_length=254,
        help_text="Where the confirmation goes; default: the quote's user_metadata.email, then the partner's "
        "contact e-mail.",
    )
    seller_name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    partner_reference = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="Your own id for the order, echoed back."
    )

    def validate_in_hand_date(self, value: date) -> date:
        # A day of slack: "today" at a venue may still be yesterday in UTC.
        if value < timezone.now().date() - timedelta(days=1):
            raise serializers.ValidationError("in_hand_date is in the past.", code="in_the_past")
        return value

    def validate(self, attrs):
        # The 400s after the field checks, in the order of docs/partners/orders.md "Orders". A partial run only
        # checks the fields that arrived before an oversized upload stopped the parser.
        if self.partial:
            return attrs
        if not attrs["is_ready_to_deliver"] and attrs.get("in_hand_date") is None:
            raise errors.InHandDateRequired(details={"field": "in_hand_date", "issue": "required"})
        upload = attrs.get("file")
        if attrs["delivery_type"] == Order.DeliveryType.PDF and upload is None:
            raise errors.FileRequired(details={"field": "file", "issue": "required"})
        if upload is not None:
            if upload.size > settings.ORDER_PDF_MAX_BYTES:
                raise too_large_error("file")
            if not is_pdf(upload):
                raise errors.ValidationFailed(
                    "file: not a PDF (a PDF file starts with %PDF-).", field="file", issue="invalid"
                )
        return attrs


def too_large_error(field: str) -> errors.ValidationFailed:
    limit = settings.ORDER_PDF_MAX_BYTES
    return errors.ValidationFailed(
        f"{field}: larger than the {limit // (1024 * 1024)} MB limit.",
        field=field,
        issue="too_large",
        details={"max_bytes": limit},
    )


@extend_schema_field({"type": "string", "format": "date-time", "example": "2026-11-21T18:30:00Z"})
class ZonedDateTimeField(serializers.Field):
    """An ISO 8601 / RFC 3339 datetime with ``Z`` or an offset (a date alone, or no zone, is invalid)."""

    default_error_messages = {"invalid": "Use an ISO 8601 datetime with Z or an offset."}
    accepts_dates = False

    def to_internal_value(self, data):
        if not isinstance(data, str) or len(data) > 64:
            self.fail("invalid")
        text = data.strip().upper()  # RFC 3339 allows a lower-case "t" and "z"
        try:
            if self.accepts_dates and len(text) == 10:
                return date.fromisoformat(text)
            value = parse_datetime(text)
            if value is None or value.tzinfo is None:
                raise ValueError(data)
            return value.astimezone(UTC)
        except (ValueError, OverflowError):
            self.fail("invalid")

    def to_representation(self, value):
        return value.isoformat()


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
        "example": "2026-11-21",
    }
)
class CreatedBoundField(ZonedDateTimeField):
    """``YYYY-MM-DD`` (a whole UTC day) or an ISO 8601 / RFC 3339 datetime with a zone."""

    default_error_messages = {"invalid": "Use YYYY-MM-DD or an ISO 8601 datetime with a zone."}
    accepts_dates = True


class OrderListParamsSerializer(PageParamsSerializer):
    status = serializers.ChoiceField(choices=Order.Status.choices, required=False)
    event_id = serializers.CharField(required=False, max_length=32)
    created_from = CreatedBoundField(
        required=False, help_text="Orders created at or after this instant (a date means its 00:00 UTC)."
    )
    created_to = CreatedBoundField(
        required=False,
        help_text="Orders created at or before this instant (a date includes the whole UTC day).",
    )
    updated_from = ZonedDateTimeField(
        required=False,
        help_text="Orders whose status changed (or that were created) at or after this instant: ISO 8601 "
        "with Z or an offset.",
    )

    def validate(self, attrs):
        start = attrs.get("created_from")
        end = attrs.get("created_to")
        if isinstance(start, date) and not isinstance(start, datetime):
            attrs["created_from"] = datetime.combine(start, time.min, tzinfo=UTC)
        if end is not None:
            try:
                if isinstance(end, datetime):
                    attrs["created_before"] = end + timedelta(microseconds=1)
                else:
                    attrs["created_before"] = datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC)
            except OverflowError:
                pass  # the end of the calendar: no upper bound
        return attrs


class OrderCancelSerializer(JSONBodySerializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=255)


# --- output -----------------------------------------------------------------------------------------------
class OrderQuoteSnapshotSerializer(serializers.Serializer):
    offer_price = serializers.DecimalField(
        max_digits=10, decimal_places=2, coerce_to_string=False, help_text="Price per ticket at quote time."
    )
    exp_dt = serializers.CharField(help_text="Quote expiry, UTC, six fractional digits, no zone designator.")
    quote_id = serializers.CharField(help_text="The encrypted quote id.")


class OptionalTextField(serializers.CharField):
    """An optional text the partner may have left out: ``null`` rather than an empty string."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, allow_blank=True, **kwargs)

    def to_representation(self, value):
        return value or None


TRANSFER_STATE_HELP = (
    "`none` (nothing seen yet), `partial` (fewer tickets than the order's quantity), `detected` (every "
    "ticket seen: the order is `ticket_received`), `accepted` (the service accepted the tickets on the platform), "
    "`mismatch` (tickets seen that are not the order's: staff look at it) or `recalled` (the seller took the "
    "transfer back)."
)


class OrderTransferSerializer(serializers.Serializer):
    """The transfer of the tickets as the service has seen it (docs/partners/orders.md "Transfer"): states and
    counts only; the evidence itself (e-mails, links, barcodes) stays with staff."""

    state = serializers.ChoiceField(choices=Order.TransferState.choices, help_text=TRANSFER_STATE_HELP)
    quantity_detected = serializers.IntegerField(
        help_text="How many of the order's tickets the transfer covered."
    )
    source = serializers.ChoiceField(
        choices=Order.TransferSource.choices,
        allow_null=True,
        help_text="What showed the tickets: `email` (the platform's transfer e-mail), `file` (the ticket "
        "file) or `staff`; null until something did.",
    )
    detected_at = serializers.DateTimeField(allow_null=True, help_text="When every ticket was first seen.")
    accepted_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the tickets were accepted on the platform (mobile transfers pay out after it).",
    )


class OrderSerializer(serializers.Serializer):
    order_id = serializers.CharField()
    event_id = serializers.CharField(source="event.event_id")
    section_name = serializers.CharField()
    section_name_display = serializers.CharField()
    row_name = serializers.CharField()
    row_name_display = serializers.CharField()
    quantity = serializers.IntegerField()
    general_admission = serializers.BooleanField()
    face_value = serializers.DecimalField(
        max_digits=10, decimal_places=2, coerce_to_string=True, help_text="USD, a string with two decimals."
    )
    total_price = serializers.DecimalField(
        max_digits=12, decimal_places=2, coerce_to_string=False, help_text="USD, a JSON number."
    )
    status = serializers.ChoiceField(choices=Order.Status.choices)
    quotes = serializers.SerializerMethodField()
    restrictions = serializers.ListField(child=serializers.CharField())
    restriction_detail = serializers.CharField(allow_null=True)
    primary_site = serializers.CharField()
    created_at = serializers.DateTimeField()
    delivery_type = serializers.ChoiceField(choices=Order.DeliveryType.choices)
    is_ready_to_deliver = serializers.BooleanField()
    in_hand_date = serializers.DateField(allow_null=True, format="iso-8601")
    transfer_address = serializers.CharField(help_text="Where the seller sends the tickets.")
    transfer = OrderTransferSerializer(help_text="The transfer of the tickets as the service saw it.")
    partner_reference = OptionalTextField(
        help_text="The partner's own reference, as sent; null when none was."
    )
    seller_email = OptionalTextField(help_text="The seller_email sent with the order; null when none was.")
    livemode = serializers.BooleanField(
        help_text="false for a test-mode order (made with a test-mode token); true for a live one."
    )

    @extend_schema_field(OrderQuoteSnapshotSerializer(many=True))
    def get_quotes(self, order: Order) -> list[dict]:
        return order_quotes(order)


def order_quotes(order: Order) -> list[dict]:
    """``quotes`` of an order: the snapshot of the quote it was made from."""
    return [
        {
            "offer_price": order.offer_price,
            "exp_dt": order.quote_expires_at.astimezone(UTC).strftime(EXP_DT_FORMAT),
            "quote_id": order.quote_token,
        }
    ]


class OrderStatusChangeSerializer(serializers.Serializer):
    from_status = serializers.SerializerMethodField()
    to_status = serializers.CharField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(
        source="actor_kind", help_text="Who moved the order: `partner`, `staff` or `system`."
    )
    reason = serializers.CharField(allow_blank=True)

    @extend_schema_field({"type": "string", "nullable": True, "description": "null for the creation."})
    def get_from_status(self, change: OrderStatusHistory) -> str | None:
        return change.from_status or None


class OrderDetailSerializer(OrderSerializer):
    # The single order (GET, cancel, notifications) says when its status last changed, so a receiver of
    # notifications delivered out of order can drop a stale one (docs/partners/notifications-and-webhooks.md "Webhooks").
    status_changed_at = serializers.DateTimeField(
        help_text="When the status last changed (creation included)."
    )
    status_history = OrderStatusChangeSerializer(many=True, source="history_rows")


class OrderListSerializer(serializers.Serializer):
    results = OrderSerializer(many=True)
    has_more = serializers.BooleanField()
    next_cursor = serializers.CharField(allow_null=True)
