from django.urls import path

from . import api

urlpatterns = [
    path("events", api.EventListView.as_view(), name="events-list"),
    path("events/<str:event_id>", api.EventDetailView.as_view(), name="events-detail"),
    path("events/<str:event_id>/sections", api.SectionListView.as_view(), name="events-sections"),
    # <path:…> so a section name may hold a slash (sent URL-encoded as %2F, decoded before routing).
    path("events/<str:event_id>/sections/<path:name>/rows", api.RowListView.as_view(), name="events-rows"),
]
