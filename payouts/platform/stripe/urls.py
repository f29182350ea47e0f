"""Stripe's deliveries, mounted at ``/payments/stripe/`` (``URLS`` of payouts/platform/stripe/__init__.py)."""

from django.urls import path

from .views import stripe_events

app_name = "stripe"
urlpatterns = [path("events", stripe_events, name="events")]
