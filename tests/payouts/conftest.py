"""The payouts tests' shared fixtures: Stripe's library with a recording HTTP client (``stripe_recording``), and
the partner and orders of the Stripe events tests (``stripe_events_support``)."""

from tests.payouts.stripe_events_support import (  # noqa: F401  (fixtures, found here by name)
    charged_order,
    payout_in_flight,
    stripe_partner,
)
from tests.payouts.stripe_recording import recording_stripe  # noqa: F401  (a fixture, found here by name)
