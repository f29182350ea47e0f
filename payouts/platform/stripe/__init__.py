"""The ``stripe`` payment platform (``PAYMENT_PLATFORM=stripe``; docs/operations/payments-stripe.md), one folder:

- ``backend.py``: ``StripePlatform``, the interface on Stripe Connect, Checkout, PaymentIntents and Payouts;
- ``client.py``: the process's ``StripeClient`` built from the ``STRIPE_*`` settings, and Stripe's errors as
  the interface's;
- ``events.py``: Stripe's events verified and read into the interface's terms, then handed to the shared
  handling (``payouts.services.platform_events``);
- ``views.py``, ``urls.py``: ``POST /payments/stripe/events``, where Stripe delivers them.
"""

from __future__ import annotations

from ..base import PaymentPlatform
from .backend import StripePlatform

URLS = ("payments/stripe/", "payouts.platform.stripe.urls")


def backend() -> PaymentPlatform:
    return StripePlatform.from_settings()
