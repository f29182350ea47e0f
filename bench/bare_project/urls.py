"""``/events``: a list of 20 events shaped like the service's events list, built once at import; ``/healthz``: 200."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

# The fields of the service's event (catalog/serializers.py ``event_data``), static values of similar lengths.
EVENTS = [
    {
        "event_id": f"evt_{i:024x}",
        "event_name": f"Skyline Festival: night {i + 1}",
        "event_datetime_utc": f"2026-12-{1 + i:02d}T01:00:00Z",
        "event_datetime_local": f"2026-12-{1 + i:02d}T20:00:00",
        "event_timezone": "America/New_York",
        "event_date": f"2026-12-{1 + i:02d}",
        "venue": {
            "venue_id": f"ven_{i % 7:024x}",
            "venue_name": "Harbour Arena",
            "city": "New York",
            "state": "NY",
            "country": "US",
        },
        "performers": [
            {"performer_id": f"prf_{i:024x}", "performer_name": "The Skyline Band"},
            {"performer_id": f"prf_{i + 100:024x}", "performer_name": "Opening Act"},
        ],
        "primary_site": "ticketmaster",
        "status": "scheduled",
    }
    for i in range(20)
]


def events(request: HttpRequest) -> JsonResponse:
    return JsonResponse(EVENTS, safe=False)


def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [path("events", events), path("healthz", healthz)]
