from django.urls import path

from . import api

urlpatterns = [
    path("quotes", api.quote_create_view, name="quotes-create"),
    path("quotes/<path:quote_id>", api.QuoteDetailView.as_view(), name="quotes-detail"),
]
