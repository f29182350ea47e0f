"""Example payloads for the OpenAPI schema of the quote endpoints."""

QUOTE_REQUEST = {
    "event_id": "evt_8fK2mQ9xLr3TbV7nW1cZ",
    "section_name": "Lower 101",
    "row_name": "B",
    "quantity": 2,
    "user_metadata": {
        "first_name": "Dana",
        "last_name": "Reyes",
        "email": "dana.reyes@example.com",
        "phone_number": "+1 212 555 0142",
    },
}

QUOTE_REQUEST_BEST_ROW = {"event_id": "evt_8fK2mQ9xLr3TbV7nW1cZ", "section_name": "Floor GA", "quantity": 4}

QUOTE = {
    "quote_id": "qte_ncCWCy1K9QoXW0OFj5Wnfvgt3wuKyv1XHO0G4NPBE3BWnqR9",
    "status": "active",
    "event_id": "evt_8fK2mQ9xLr3TbV7nW1cZ",
    "event_name": "Harbor Lights Tour",
    "section_name": "Lower 101",
    "section_name_display": "Lower Level 101",
    "row_name": "B",
    "row_name_display": "Row B",
    "quantity": 2,
    "general_admission": False,
    "offer_price": 120.5,
    "total_price": 241.0,
    "face_value": "165.00",
    "currency": "USD",
    "expires_at": "2026-11-21T18:45:00Z",
    "exp_dt": "2026-11-21T18:45:00.000000",
    "restrictions": ["Obstructed view"],
    "restriction_detail": "A pillar blocks part of the stage from seats 1–4.",
    "primary_site": "ticketmaster",
    "livemode": True,
}

QUOTE_CONSUMED = {**QUOTE, "status": "consumed", "order_id": "ord_Tq8ZbN3wK5xR1mV9cL2p"}
