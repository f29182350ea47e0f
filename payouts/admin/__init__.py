"""Staff admin for payment methods (masked), charges and payouts (with the confirmed retries of failed refunds
and payouts). The partner and order pages, extended with their money, are registered by the back office
(``payouts.backoffice.admin``). Everything here is read-only except what goes through a service."""

from . import methods, money, platform_events  # noqa: F401  (each module registers its pages)
