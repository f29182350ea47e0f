"""The one registration of the admins that span apps: the order page with its charge and payout, the partner
page with its payment methods. The lower apps keep their ``OrderAdmin`` and ``PartnerAdmin`` unregistered."""

from . import orders, partners  # noqa: F401  (each module registers its page)
