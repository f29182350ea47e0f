"""The payment platform (payouts/platform/): which one moves the money, the sandbox's pace, and Stripe's keys,
endpoints and webhook bounds (docs/operations/payments-stripe.md "API version")."""

from config.settings_parts.environment import env, required_in_production

# No default in production: a deployment says which platform moves its money (the sandbox moves none).
# The name is one of payouts/platform/registry.py's: the payouts app refuses to start on any other.
PAYMENT_PLATFORM = required_in_production("PAYMENT_PLATFORM", "sandbox")
SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS = env.int("SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS", default=60)
SANDBOX_PAYOUT_PAID_AFTER_SECONDS = env.int("SANDBOX_PAYOUT_PAID_AFTER_SECONDS", default=300)
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_CONNECT_CLIENT_ID = env.str("STRIPE_CONNECT_CLIENT_ID", default="")
# Stripe's endpoints (overridable for a proxy or a Stripe mock) and the API version sent on every call: the
# version the pinned ``stripe`` package is typed for.
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="https://api.stripe.com").rstrip("/")
STRIPE_CONNECT_BASE = env.str("STRIPE_CONNECT_BASE", default="https://connect.stripe.com").rstrip("/")
STRIPE_API_VERSION = env.str("STRIPE_API_VERSION", default="2026-10-28.endive")
# The library retries network faults, 409s and 5xx this many times (same idempotency key) before giving up.
STRIPE_MAX_NETWORK_RETRIES = env.int("STRIPE_MAX_NETWORK_RETRIES", default=2)
# The signing secrets (whsec_…) of the endpoints that deliver to /payments/stripe/events, comma-separated: the
# platform's endpoint and the Connect one each have their own, and a rolled secret overlaps its successor.
STRIPE_WEBHOOK_SECRET = env.list("STRIPE_WEBHOOK_SECRET", default=[])
# A signed event older than this is refused (a replay); Stripe's own default.
STRIPE_WEBHOOK_TOLERANCE_SECONDS = env.int("STRIPE_WEBHOOK_TOLERANCE_SECONDS", default=300)
# Stripe's events are a few kilobytes; anything past this is refused (413) before it is read further.
STRIPE_WEBHOOK_MAX_BYTES = env.int("STRIPE_WEBHOOK_MAX_BYTES", default=256 * 1024)
# A platform call that takes longer than this is treated as unavailable (the caller retries).
PAYMENT_PLATFORM_TIMEOUT_SECONDS = env.float("PAYMENT_PLATFORM_TIMEOUT_SECONDS", default=10.0)
