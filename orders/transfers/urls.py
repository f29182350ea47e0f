"""The providers' inbound webhooks, mounted at ``/inbound/`` (config/urls.py) with anymail's own paths, so a
provider is set up as anymail's documentation describes (docs/operations/receiving-mail.md "Provider channels")."""

from django.urls import path, re_path

from orders.transfers.intake.provider_views import MailgunInboundView, PostmarkInboundView, SESInboundView

urlpatterns = [
    path("amazon_ses/inbound/", SESInboundView.as_view(), name="inbound-amazon-ses"),
    # A Mailgun route forwarding to a URL containing "mime" posts the raw message (body-mime); the other
    # URL gets Mailgun's parsed fields only, which cannot be verified.
    re_path(r"^mailgun/inbound(_mime)?/$", MailgunInboundView.as_view(), name="inbound-mailgun"),
    path("postmark/inbound/", PostmarkInboundView.as_view(), name="inbound-postmark"),
]
