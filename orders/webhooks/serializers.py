"""Input validation and output shapes of ``/v1/webhook_endpoints`` (docs/partners/notifications-and-webhooks.md "Webhooks")."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.pagination import PageParamsSerializer
from config.api.validation import JSONBodySerializer
from orders.models import Notification

from .models import WebhookAttempt, WebhookEndpoint

SUBSCRIBABLE_TYPES = Notification.Type.subscribable()
EVENT_TYPE_CHOICES = [*SUBSCRIBABLE_TYPES, "*"]


MAX_EVENT_TYPES = 10
EVENT_TYPES_HELP = (
    f"Any of {', '.join(f'`{t}`' for t in SUBSCRIBABLE_TYPES[:-1])} and `{SUBSCRIBABLE_TYPES[-1]}` (e.g. "
    '`["order.created", "order.status_changed"]`), or `["*"]` for every type, those added later included. '
    "At most 10 entries, counted as sent; a type named twice is kept once (duplicates are folded, not "
    "refused)."
)


# --- input ------------------------------------------------------------------------------------------------
@extend_schema_field(
    {
        "oneOf": [
            {
                "type": "array",
                "items": {"type": "string", "enum": list(SUBSCRIBABLE_TYPES)},
                "minItems": 1,
                "maxItems": MAX_EVENT_TYPES,
            },
            {"type": "array", "items": {"type": "string", "enum": ["*"]}, "minItems": 1, "maxItems": 1},
        ],
        "description": EVENT_TYPES_HELP,
        "example": ["order.created", "order.status_changed"],
    }
)
class EventTypesField(serializers.ListField):
    def __init__(self, **kwargs):
        super().__init__(
            child=serializers.ChoiceField(choices=EVENT_TYPE_CHOICES),
            allow_empty=False,
            max_length=MAX_EVENT_TYPES,
            help_text=EVENT_TYPES_HELP,
            **kwargs,
        )

    def to_internal_value(self, data):
        values = super().to_internal_value(data)
        # The limits count the entries as sent: 11 entries are refused even when they repeat.
        self.run_validators(values)
        if "*" in values and len(values) > 1:
            raise serializers.ValidationError(
                '"*" stands alone: it already means every type.', code="invalid"
            )
        return list(dict.fromkeys(values))  # duplicates dropped, order kept


# An absolute http(s) URL of URI characters (RFC 3986), with a host and without credentials. The schema
# states the same pattern; what no pattern can say (the host resolves to public addresses only, https://
# in production, a port up to 65535) is checked by the service (orders.webhooks.targets).
URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9\[\]._~%!$&'()*+,;=-][A-Za-z0-9\[\]._~%!$&'()*+,;=:-]*"
    r"(?:[/?#][A-Za-z0-9._~%!$&'()*+,;=:@/?#\[\]-]*)?$"
)
URL_HELP = (
    "Where to POST: an absolute `http://` or `https://` URL (`https://` only in production), without "
    "credentials. The host must resolve to public addresses (otherwise VALIDATION_ERROR `{field: url, issue: "
    "not_allowed}`)."
)


@extend_schema_field(
    {"type": "string", "format": "uri", "pattern": URL_PATTERN, "maxLength": 2048, "description": URL_HELP}
)
class WebhookURLField(serializers.CharField):
    def __init__(self, **kwargs):
        # Taken as sent, not trimmed: the pattern judges every character ("\\Z": Python's "$" would also
        # match before a final newline, ECMA 262's does not).
        super().__init__(max_length=2048, trim_whitespace=False, help_text=URL_HELP, **kwargs)
        self.validators.append(
            RegexValidator(
                URL_PATTERN.removesuffix("$") + r"\Z",
                "Must be an absolute http(s) URL without credentials.",
                "invalid",
            )
        )


class EndpointCreateSerializer(JSONBodySerializer):
    url = WebhookURLField()
    event_types = EventTypesField()
    description = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")


class EndpointUpdateSerializer(JSONBodySerializer):
    url = WebhookURLField(required=False)
    event_types = EventTypesField(required=False)
    description = serializers.CharField(max_length=255, required=False, allow_blank=True)
    status = serializers.ChoiceField(
        choices=WebhookEndpoint.Status.choices,
        required=False,
        help_text="`disabled` stops deliveries; `enabled` starts them again (and restarts the 3-day clock).",
    )


class RotateSecretSerializer(JSONBodySerializer):
    expire_previous_in_seconds = serializers.IntegerField(
        min_value=0,
        max_value=86400,
        default=86400,
        help_text="How long the previous secret keeps signing (a second signature): 0–86400, default 86400.",
    )


class ResendSerializer(JSONBodySerializer):
    notification_id = serializers.CharField(max_length=64, help_text="One of your notifications (`ntf_…`).")


class ListParamsSerializer(PageParamsSerializer):
    pass


# --- output -----------------------------------------------------------------------------------------------
class EndpointSerializer(serializers.Serializer):
    endpoint_id = serializers.CharField()
    url = serializers.CharField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_TYPE_CHOICES))
    description = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=WebhookEndpoint.Status.choices)
    disabled_reason = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    livemode = serializers.BooleanField()

    @extend_schema_field(
        {
            "type": "string",
            "nullable": True,
            "enum": [*WebhookEndpoint.DisabledReason.values, None],
            "description": "Why a disabled endpoint is disabled; null while enabled.",
        }
    )
    def get_disabled_reason(self, endpoint: WebhookEndpoint) -> str | None:
        return endpoint.disabled_reason or None


class EndpointWithSecretSerializer(EndpointSerializer):
    secret = serializers.CharField(
        help_text="`whsec_` + base64 of 32 random bytes. Shown in this response only."
    )


class EndpointListSerializer(serializers.Serializer):
    results = EndpointSerializer(many=True)
    has_more = serializers.BooleanField()
    next_cursor = serializers.CharField(allow_null=True)


class EndpointDeletedSerializer(serializers.Serializer):
    endpoint_id = serializers.CharField()
    deleted = serializers.BooleanField(help_text="Always true.")


class DeliveryCreatedSerializer(serializers.Serializer):
    notification_id = serializers.CharField()
    delivery_id = serializers.CharField()


class AttemptSerializer(serializers.Serializer):
    delivery_id = serializers.CharField(source="delivery.delivery_id")
    notification_id = serializers.CharField(source="delivery.notification.notification_id")
    type = serializers.CharField(source="delivery.notification.type")
    attempt = serializers.IntegerField(source="number", help_text="1 for the first attempt of a delivery.")
    status = serializers.ChoiceField(
        choices=WebhookAttempt.Status.choices,
        help_text="`pending` (being sent), `succeeded` (2xx), `retrying` (failed, another attempt is "
        "scheduled at `next_attempt_at`), `failed` (failed, no more attempts).",
    )
    response_status = serializers.IntegerField(allow_null=True)
    error = serializers.SerializerMethodField()
    duration_ms = serializers.IntegerField(allow_null=True)
    attempted_at = serializers.DateTimeField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field({"type": "string", "nullable": True, "example": "http_error: HTTP 500"})
    def get_error(self, attempt: WebhookAttempt) -> str | None:
        return attempt.error or None


class AttemptListSerializer(serializers.Serializer):
    results = AttemptSerializer(many=True)
    has_more = serializers.BooleanField()
    next_cursor = serializers.CharField(allow_null=True)
