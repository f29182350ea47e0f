"""Stripe's deliveries, mounted at ``/payments/stripe/`` (config/urls.py)."""

from django.urls import path

from .stripe_views import stripe_events

app_name = "stripe"
urlpatterns = [path("events", stripe_events, name="events")]
