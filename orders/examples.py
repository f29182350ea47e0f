"""OpenAPI descriptions and examples of the orders endpoints (kept out of api.py so the views stay short)."""

from drf_spectacular.utils import OpenApiExample

CREATE_DESCRIPTION = """\
Turns a quote into an order. The body is **multipart/form-data** (a JSON body is 400 VALIDATION_ERROR on
`body`), because a PDF may be uploaded.

Checks, in order: token, scope `orders:write`, payout method and card on file (403
PAYOUT_METHOD_NOT_CONFIGURED), then the form, whose 400s come in this order — field checks
(VALIDATION_ERROR, e.g. a `delivery_type` outside `mobile_transfer|mobile_qr|pdf`, or an
`is_ready_to_deliver` other than true/false/1/0), IN_HAND_DATE_REQUIRED, FILE_REQUIRED, the PDF over
10 MB (VALIDATION_ERROR `{field: file, issue: too_large}`; exactly 10 485 760 bytes is accepted), a file
that is not a PDF (VALIDATION_ERROR `{field: file, issue: invalid}`) — then QUOTE_NOT_FOUND, FORBIDDEN
(another partner's quote), QUOTE_ALREADY_CONSUMED (a used quote, even after its TTL), QUOTE_EXPIRED (details
`{quote_id, expired_at}`), INVALID_DELIVERY_DEADLINE (`in_hand_date` must be at most the event's local date
minus 2 days), EVENT_EXPIRED (event started or canceled), INSUFFICIENT_QUANTITY (the row ran out after the
quote; details `{requested, available}`).

The quote is consumed and the row's quantity taken in one transaction: of N concurrent requests with one
quote exactly one gets 201. The order is created with status `accepted`; in the background the partner's card
is charged for `total_price`, the seller is e-mailed the transfer address and event details, and the order
moves to `awaiting_transfer` (or to `canceled` if the card is declined).

Optional fields beyond the spec: `seller_email`, `seller_name` (the confirmation goes to `seller_email`, else
the quote's `user_metadata.email`, else the partner's contact e-mail) and `partner_reference` (≤ 64 chars,
echoed back). A file, when sent, must be a PDF of at most 10 MB whatever the delivery type.
"""

TRANSFER_NONE = {
    "state": "none",
    "quantity_detected": 0,
    "source": None,
    "detected_at": None,
    "accepted_at": None,
}
TRANSFER_DETECTED = {
    "state": "detected",
    "quantity_detected": 2,
    "source": "email",
    "detected_at": "2026-11-22T10:04:12Z",
    "accepted_at": None,
}

ORDER_EXAMPLE = {
    "order_id": "ord_8Fq2LmZt0VxR4bN7cKpA",
    "event_id": "evt_3kP9xQ2mL7vB1nZ8cT4w",
    "section_name": "112",
    "section_name_display": "Section 112",
    "row_name": "F",
    "row_name_display": "Row F",
    "quantity": 2,
    "general_admission": False,
    "face_value": "85.00",
    "total_price": 170.0,
    "status": "accepted",
    "quotes": [
        {
            "offer_price": 85.0,
            "exp_dt": "2026-11-21T18:45:00.000000",
            "quote_id": "qte_W1m4cS0mZJ3p6m0k2d4eQm9Gf7x8Zb1c2V3n4M5b6",
        }
    ],
    "restrictions": ["Obstructed view"],
    "restriction_detail": "Partial view of the stage",
    "primary_site": "ticketmaster",
    "created_at": "2026-11-21T18:31:07Z",
    "delivery_type": "mobile_transfer",
    "is_ready_to_deliver": False,
    "in_hand_date": "2026-12-08",
    "transfer_address": "ord-k3x9q2m7v1n8c4wz@transfers.buyback.example",
    "transfer": TRANSFER_NONE,
    "partner_reference": "A-10042",
    "seller_email": "jane.doe@example.com",
    "livemode": True,
}

CREATE_EXAMPLES = [
    OpenApiExample(
        "Mobile transfer, delivered later",
        request_only=True,
        media_type="multipart/form-data",
        value={
            "quote_id": "qte_W1m4cS0mZJ3p6m0k2d4eQm9Gf7x8Zb1c2V3n4M5b6",
            "delivery_type": "mobile_transfer",
            "is_ready_to_deliver": "false",
            "in_hand_date": "2026-12-08",
            "seller_email": "jane.doe@example.com",
            "partner_reference": "A-10042",
        },
    ),
    OpenApiExample(
        "PDF, ready now",
        request_only=True,
        media_type="multipart/form-data",
        value={
            "quote_id": "qte_W1m4cS0mZJ3p6m0k2d4eQm9Gf7x8Zb1c2V3n4M5b6",
            "delivery_type": "pdf",
            "is_ready_to_deliver": "true",
            "file": "(binary PDF, at most 10 MB)",
        },
    ),
    OpenApiExample("Order created", response_only=True, status_codes=["201"], value=ORDER_EXAMPLE),
]

HISTORY_EXAMPLE = [
    {
        "from_status": None,
        "to_status": "accepted",
        "at": "2026-11-21T18:31:07Z",
        "actor": "partner",
        "reason": "Order created",
    },
    {
        "from_status": "accepted",
        "to_status": "awaiting_transfer",
        "at": "2026-11-21T18:31:09Z",
        "actor": "system",
        "reason": "Card charged",
    },
]

DETAIL_EXAMPLES = [
    OpenApiExample(
        "Order",
        response_only=True,
        value={
            **ORDER_EXAMPLE,
            "status": "awaiting_transfer",
            "status_changed_at": "2026-11-21T18:31:09Z",
            "status_history": HISTORY_EXAMPLE,
        },
    )
]

LIST_EXAMPLES = [
    OpenApiExample(
        "One page",
        response_only=True,
        value={
            "results": [{**ORDER_EXAMPLE, "status": "awaiting_transfer"}],
            "has_more": True,
            "next_cursor": "eyJvIjpbIi1jcmVhdGVkX2F0IiwiLWlkIl0sInYiOlt7ImR0IjoiMjAyNi0xMS0yMVQxODozMTowNyJ9LDQyXX0",
        },
    )
]

CANCEL_EXAMPLES = [
    OpenApiExample("Cancel", request_only=True, value={"reason": "Seller changed their mind"}),
    OpenApiExample(
        "Canceled",
        response_only=True,
        value={
            **ORDER_EXAMPLE,
            "status": "canceled",
            "status_changed_at": "2026-11-22T09:00:00Z",
            "status_history": [
                *HISTORY_EXAMPLE,
                {
                    "from_status": "awaiting_transfer",
                    "to_status": "canceled",
                    "at": "2026-11-22T09:00:00Z",
                    "actor": "partner",
                    "reason": "Seller changed their mind",
                },
            ],
        },
    ),
]


NOTIFICATIONS_DESCRIPTION = """\
The caller's notifications of the token's mode, **oldest first**, cursor-paginated: every change of an order
(`order.created`, `order.status_changed` for each transition) and `webhook.ping`, written in the same
transaction as the change and kept 30 days. This is the pull path: a partner that missed a webhook catches
up here. Scope `orders:write`.

Each notification is `{id, type, created_at, livemode, data}`. For `order.created` and
`order.status_changed` `data` is `{order, previous_status, reason}`: `order` is the order exactly as
`GET /v1/orders/{order_id}` returned it at the change (its `status`, `transfer` and `status_history`
included), `previous_status` is null for `order.created`, and `reason` is the transition's machine reason
where it has one (`card_declined`, `canceled_by_partner`, `canceled_by_staff`, `event_canceled`,
`in_hand_date_passed`, `transfer_detected`, `file_verified`, `received_by_staff`, `transfer_recalled`,
`payout_failed`), else null.
For `order.transfer_updated` (every change of the order's `transfer.state`) `data` is
`{order, previous_transfer_state, reason}`, `reason` one of `transfer_detected`, `file_verified`,
`received_by_staff`, `transfer_partial`, `transfer_mismatch`, `transfer_accepted`, `accepted_by_staff`,
`transfer_recalled`.

Filters: `type`, `order_id`, and `after` — one of your notification ids: only the notifications after it,
for resuming a poll (an id that is not yours, or was purged, is 400 VALIDATION_ERROR on `after`).
"""

NOTIFICATION_EXAMPLE = {
    "id": "ntf_5Hq8ZtR2mVb7Lc0Xk3Pw",
    "type": "order.status_changed",
    "created_at": "2026-11-21T18:31:09Z",
    "livemode": True,
    "data": {
        "order": {
            **ORDER_EXAMPLE,
            "status": "awaiting_transfer",
            "status_changed_at": "2026-11-21T18:31:09Z",
            "status_history": HISTORY_EXAMPLE,
        },
        "previous_status": "accepted",
        "reason": None,
    },
}

TRANSFER_NOTIFICATION_EXAMPLE = {
    "id": "ntf_7Kd2ZtR2mVb7Lc0Xk3Qa",
    "type": "order.transfer_updated",
    "created_at": "2026-11-22T10:04:12Z",
    "livemode": True,
    "data": {
        "order": {
            **ORDER_EXAMPLE,
            "status": "ticket_received",
            "transfer": TRANSFER_DETECTED,
            "status_changed_at": "2026-11-22T10:04:12Z",
            "status_history": [
                *HISTORY_EXAMPLE,
                {
                    "from_status": "awaiting_transfer",
                    "to_status": "ticket_received",
                    "at": "2026-11-22T10:04:12Z",
                    "actor": "system",
                    "reason": "Transfer e-mail from the platform matched the order",
                },
            ],
        },
        "previous_transfer_state": "none",
        "reason": "transfer_detected",
    },
}

NOTIFICATION_DETAIL_EXAMPLES = [
    OpenApiExample("Notification", response_only=True, value=NOTIFICATION_EXAMPLE),
    OpenApiExample("Transfer updated", response_only=True, value=TRANSFER_NOTIFICATION_EXAMPLE),
]

NOTIFICATION_LIST_EXAMPLES = [
    OpenApiExample(
        "One page",
        response_only=True,
        value={
            "results": [NOTIFICATION_EXAMPLE, TRANSFER_NOTIFICATION_EXAMPLE],
            "has_more": True,
            "next_cursor": "eyJvIjpbImlkIl0sInYiOls0Ml19",
        },
    )
]

ADVANCED_ORDER_EXAMPLE = {
    **ORDER_EXAMPLE,
    "status": "paid",
    "livemode": False,
    "transfer": {
        "state": "accepted",
        "quantity_detected": 2,
        "source": "staff",
        "detected_at": "2026-11-21T18:32:00Z",
        "accepted_at": "2026-11-21T18:32:00Z",
    },
    "status_changed_at": "2026-11-21T18:32:00Z",
    "status_history": [
        *HISTORY_EXAMPLE,
        *(
            {
                "from_status": before,
                "to_status": after,
                "at": "2026-11-21T18:32:00Z",
                "actor": "system",
                "reason": reason,
            }
            for before, after, reason in (
                ("awaiting_transfer", "ticket_received", "Test mode: ticket received"),
                ("ticket_received", "payout_in_process", "Test mode: payout started (no money moves)"),
                ("payout_in_process", "scheduled", "Test mode: payout scheduled (no money moves)"),
                ("scheduled", "paid", "Test mode: payout disbursed (no money moves)"),
            )
        ),
    ],
}
