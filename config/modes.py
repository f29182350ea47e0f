"""Live and test mode (DECISIONS "Test mode"): one flag every query of a partner's objects filters on.

Quotes, orders, notifications and webhook endpoints each carry ``livemode``. Their managers are
``ModeScopedQuerySet``: ``for_principal(principal)`` keeps the caller's partner *and* the mode of the caller's
token, so a selector cannot read an object of the other mode by leaving the flag out. A principal is anything
with ``pk`` (the partner's primary key) and ``livemode``: the API's ``PartnerPrincipal``, or ``PartnerMode``
for the portal, whose mode is the signed-in user's Test/Live switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from django.db import models


class Principal(Protocol):
    pk: int
    livemode: bool


@dataclass(frozen=True)
class PartnerMode:
    """A partner seen in one mode (the portal's switch, a staff view)."""

    pk: int
    livemode: bool = True


class ModeScopedQuerySet(models.QuerySet):
    def for_principal(self, principal: Principal) -> ModeScopedQuerySet:
        """The principal's partner's objects of the principal's mode: the only filter the API reads with."""
        return self.filter(partner_id=principal.pk, livemode=principal.livemode)

    def live(self) -> ModeScopedQuerySet:
        """Live objects only: staff figures, payouts, alerts and the quantity of real rows."""
        return self.filter(livemode=True)
