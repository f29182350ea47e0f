"""Example payloads for the OpenAPI schema of the catalog endpoints."""

EVENT = {
    "event_id": "evt_8fK2mQ9xLr3TbV7nW1cZ",
    "event_name": "Harbor Lights Tour",
    "event_datetime_utc": "2026-12-02T00:30:00Z",
    "event_datetime_local": "2026-12-01T19:30:00",
    "event_timezone": "America/New_York",
    "event_date": "2026-12-01",
    "venue": {
        "venue_id": "ven_Q4nB7wX2pL9kR3mT6yHs",
        "venue_name": "Madison Square Garden",
        "city": "New York",
        "state": "NY",
        "country": "US",
    },
    "performers": [{"performer_id": "prf_Z1xC5vB8nM2kL7jH4gFd", "performer_name": "The Harbor Lights"}],
    "primary_site": "ticketmaster",
    "status": "scheduled",
}

EVENT_PAGE = {
    "results": [EVENT],
    "has_more": True,
    "next_cursor": "eyJvIjpbInN0YXJ0c19hdCIsImlkIl0sInYiOlt7ImR0IjoiMjAyNi0xMi0wMlQwMDozMDowMCswMDowMCJ9LDQyXX0",
}

SECTION_PAGE = {
    "results": [
        {
            "section_name": "Floor GA",
            "section_name_display": "Floor General Admission",
            "general_admission": True,
            "available_quantity": 40,
            "min_offer_price": 95.0,
        },
        {
            "section_name": "Lower 101",
            "section_name_display": "Lower Level 101",
            "general_admission": False,
            "available_quantity": 24,
            "min_offer_price": 120.5,
        },
    ],
    "has_more": False,
    "next_cursor": None,
}

ROW_PAGE = {
    "results": [
        {
            "row_name": "A",
            "row_name_display": "Row A",
            "available_quantity": 8,
            "offer_price": 142.25,
            "face_value": "165.00",
            "restrictions": [],
            "restriction_detail": None,
        },
        {
            "row_name": "B",
            "row_name_display": "Row B",
            "available_quantity": 16,
            "offer_price": 120.5,
            "face_value": "165.00",
            "restrictions": ["Obstructed view"],
            "restriction_detail": "A pillar blocks part of the stage from seats 1–4.",
        },
    ],
    "has_more": False,
    "next_cursor": None,
}
