"""Live and test mode (docs/partners/test-mode.md "Test mode"): one flag every query of a partner's objects filters on.

Quotes, orders, notifications and webhook endpoints each carry ``livemode``. Their managers are
``ModeScopedQuerySet``: ``for_principal(principal)`` keeps the caller's partner *and* the mode of the caller's
token, so a selector cannot read an object of the other mode by leaving the flag out. A principal is anything
with ``pk`` (the partner's primary key) and ``livemode``: the API's ``PartnerPrincipal``, or ``PartnerMode``
for the portal, whose mode is the signed-in user's Test/Live switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from django.contrib import admin
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


class ModeFilter(admin.SimpleListFilter):
    """Staff views show live data unless test data is asked for (docs/partners/test-mode.md "Test mode")."""

    title = "mode"
    parameter_name = "mode"
    LIVE, TEST, ALL = "live", "test", "all"

    def lookups(self, request, model_admin):
        return [(self.LIVE, "Live"), (self.TEST, "Test"), (self.ALL, "Live and test")]

    def _selected(self) -> str:
        value = self.value()
        return value if value in (self.LIVE, self.TEST, self.ALL) else self.LIVE

    def choices(self, changelist):
        # No "All" entry of Django's own: the default is live, and "Live and test" is asked for explicitly.
        for value, label in self.lookup_choices:
            yield {
                "selected": self._selected() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        selected = self._selected()
        if selected == self.ALL:
            return queryset
        return queryset.filter(livemode=selected == self.LIVE)
