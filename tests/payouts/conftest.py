"""The payouts tests' shared fixture: Stripe's library with a recording HTTP client (``stripe_recording``)."""

from tests.payouts.stripe_recording import recording_stripe  # noqa: F401  (a fixture, found here by name)
