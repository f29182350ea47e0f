"""OpenAPI descriptions and examples of ``/v1/webhook_endpoints`` (kept out of api.py so the views stay short)."""

from drf_spectacular.utils import OpenApiExample

DELIVERY_CONTRACT = """\
Deliveries follow Standard Webhooks 1.0: a `POST` with `Content-Type: application/json` whose body is the
notification object plus Standard Webhooks' `timestamp` (the notification's `created_at`):
`{"id": "ntf_…", "type", "timestamp", "created_at", "livemode", "data"}`. Headers: `webhook-id` (the
notification id, the same on every retry and resend), `webhook-timestamp` (Unix seconds of this attempt; every
attempt is signed afresh) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}"
keyed with the secret's bytes>`; two, space-separated, while a rotated secret's grace lasts). Only 2xx is
success; redirects are not followed (a 3xx is a failure); timeout 10 s. Retries after 5 s, 5 min, 30 min,
2 h, 5 h, 10 h, 14 h, 20 h and 24 h (up to 20 % jitter; a longer `Retry-After` on 429/503 is honoured), then the
delivery has failed. A 410 disables the endpoint at once; so do 3 days of failures without a success (the
partner's contact e-mail is told).
"""

CREATE_DESCRIPTION = (
    """\
Registers an endpoint. The answer carries its signing `secret` (`whsec_` + base64 of 32 random bytes): this
response is the only one that shows it. At most 10 endpoints per partner and mode: the 11th is 400
VALIDATION_ERROR `{field: url, issue: too_many_endpoints}`. The URL must be `https://` in production and its
host must resolve to public addresses only (400 VALIDATION_ERROR `{field: url, issue: not_allowed}`; a host
that does not resolve is `issue: unresolvable`); the same check runs again before every delivery.

"""
    + DELIVERY_CONTRACT
)

ENDPOINT_EXAMPLE = {
    "endpoint_id": "whe_7Hc2LqZt0VxR4bN7cKpA",
    "url": "https://hooks.acme.example/buyback",
    "event_types": ["order.created", "order.status_changed", "order.transfer_updated"],
    "description": "Order sync",
    "status": "enabled",
    "disabled_reason": None,
    "created_at": "2026-11-21T18:31:07Z",
    "livemode": True,
}
SECRET_EXAMPLE = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw2rE5tfKPv4w="

CREATE_EXAMPLES = [
    OpenApiExample(
        "Register",
        value={
            "url": "https://hooks.acme.example/buyback",
            "event_types": ["*"],
            "description": "Order sync",
        },
        request_only=True,
    ),
    OpenApiExample(
        "Registered",
        value={**ENDPOINT_EXAMPLE, "secret": SECRET_EXAMPLE},
        response_only=True,
        status_codes=["201"],
    ),
]
LIST_EXAMPLES = [
    OpenApiExample(
        "Endpoints",
        value={"results": [ENDPOINT_EXAMPLE], "has_more": False, "next_cursor": None},
        response_only=True,
    )
]
DETAIL_EXAMPLES = [OpenApiExample("Endpoint", value=ENDPOINT_EXAMPLE, response_only=True)]
UPDATE_EXAMPLES = [
    OpenApiExample("Disable", value={"status": "disabled"}, request_only=True),
    OpenApiExample(
        "Disabled",
        value={**ENDPOINT_EXAMPLE, "status": "disabled", "disabled_reason": "disabled_by_partner"},
        response_only=True,
    ),
]
DELETE_EXAMPLES = [
    OpenApiExample(
        "Deleted", value={"endpoint_id": ENDPOINT_EXAMPLE["endpoint_id"], "deleted": True}, response_only=True
    )
]
ROTATE_EXAMPLES = [
    OpenApiExample(
        "Rotate, old secret valid 1 hour", value={"expire_previous_in_seconds": 3600}, request_only=True
    ),
    OpenApiExample(
        "Rotated",
        value={**ENDPOINT_EXAMPLE, "secret": "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"},
        response_only=True,
    ),
]
DELIVERY_CREATED = {"notification_id": "ntf_4Tq8LmZt0VxR4bN7cKpB", "delivery_id": "whd_9Lr3LmZt0VxR4bN7cKpC"}
PING_EXAMPLES = [
    OpenApiExample("Ping queued", value=DELIVERY_CREATED, response_only=True, status_codes=["202"])
]
RESEND_EXAMPLES = [
    OpenApiExample("Resend", value={"notification_id": "ntf_4Tq8LmZt0VxR4bN7cKpB"}, request_only=True),
    OpenApiExample("Resend queued", value=DELIVERY_CREATED, response_only=True, status_codes=["202"]),
]
ATTEMPT_EXAMPLES = [
    OpenApiExample(
        "Attempts",
        value={
            "results": [
                {
                    "delivery_id": "whd_9Lr3LmZt0VxR4bN7cKpC",
                    "notification_id": "ntf_4Tq8LmZt0VxR4bN7cKpB",
                    "type": "order.status_changed",
                    "attempt": 2,
                    "status": "succeeded",
                    "response_status": 200,
                    "error": None,
                    "duration_ms": 84,
                    "attempted_at": "2026-11-21T18:31:13Z",
                    "next_attempt_at": None,
                },
                {
                    "delivery_id": "whd_9Lr3LmZt0VxR4bN7cKpC",
                    "notification_id": "ntf_4Tq8LmZt0VxR4bN7cKpB",
                    "type": "order.status_changed",
                    "attempt": 1,
                    "status": "retrying",
                    "response_status": 500,
                    "error": "http_error: HTTP 500",
                    "duration_ms": 131,
                    "attempted_at": "2026-11-21T18:31:07Z",
                    "next_attempt_at": "2026-11-21T18:31:13Z",
                },
            ],
            "has_more": False,
            "next_cursor": None,
        },
        response_only=True,
    )
]
