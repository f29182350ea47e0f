"""The real URLconf with one real route, the events list, marked deprecated where it is mounted."""

from datetime import UTC, datetime

from django.urls import include, path

from catalog import api
from config.api.deprecation import deprecated

DEPRECATED_SINCE = datetime(2024, 3, 1, 0, 0, tzinfo=UTC)
SUNSET = datetime(2024, 9, 2, 0, 0, tzinfo=UTC)

urlpatterns = [
    path(
        "v1/events",
        deprecated(api.EventListView.as_view(), since=DEPRECATED_SINCE, sunset=SUNSET, entry="2024-03-01"),
    ),
    path("", include("config.urls")),
]

handler404 = "config.views.handler404"
handler500 = "config.views.handler500"
