"""Django REST framework and the OpenAPI schema (drf-spectacular): how every partner API view authenticates,
renders, parses and fails, and how ``/v1/schema`` describes it. No environment variable changes them."""

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["partners.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["partners.authentication.HasRequiredScope"],
    "DEFAULT_RENDERER_CLASSES": ["config.api.renderers.EnvelopeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.api.parsers.JSONObjectParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api.negotiation.LenientContentNegotiation",
    # Not a throttle: DRF runs these after authentication, rate limit and permissions, on every view,
    # which is where an Idempotency-Key is claimed or replayed (partners/idempotency/gate.py).
    "DEFAULT_THROTTLE_CLASSES": ["partners.idempotency.gate.IdempotencyGate"],
    "EXCEPTION_HANDLER": "config.api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "config.api.schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "UNAUTHENTICATED_TOKEN": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",
    "COERCE_DECIMAL_TO_STRING": False,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Partner API — ticket buy-back",
    "DESCRIPTION": (
        "Partners sell their customers' event tickets to the service. Exchange client credentials for a "
        "bearer token, browse events, sections and rows, lock a price with a quote, and turn the quote into "
        "an order. Every response is wrapped in the envelope `{success, data | error, meta}`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "OrderStatusEnum": "orders.models.Order.Status",
        "DeliveryTypeEnum": "orders.models.Order.DeliveryType",
        "DeliveryTypeWithoutFileEnum": "orders.serializers.DELIVERY_TYPES_WITHOUT_FILE",
        "TransferStateEnum": "orders.models.Order.TransferState",
        "TransferSourceEnum": "orders.models.Order.TransferSource",
        "StatusReasonEnum": "orders.outbox.STATUS_REASON_CODES",
        "TransferReasonEnum": "orders.outbox.TRANSFER_REASON_CODES",
        "QuoteStatusEnum": ["active", "consumed", "expired"],
        "EventStatusEnum": ["scheduled", "canceled"],
        "WebhookEndpointStatusEnum": "orders.webhooks.models.WebhookEndpoint.Status",
        "WebhookAttemptStatusEnum": "orders.webhooks.models.WebhookAttempt.Status",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema.envelope_postprocessing_hook",
        "config.api.schema.idempotency_postprocessing_hook",
        "config.api.schema.request_postprocessing_hook",
        "config.api.deprecation.deprecation_postprocessing_hook",
    ],
}
