"""Staff admin for payment methods (masked), charges and payouts (with the confirmed retries of failed refunds
and payouts), and the partner and order pages extended with their money.
Everything here is read-only except what goes through a service."""

from . import methods, money, orders  # noqa: F401  (each module registers its pages)
