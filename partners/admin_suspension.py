"""The partner admin's suspension and reactivation: the partner page's buttons and the list's bulk actions, each
behind the staff confirmation with a reason (kept in the partner's status history and the audit log).

Both changes are one implementation, ``SuspensionAdminMixin._change_status``: what differs between them (the
service that makes the change, the words staff read) is a ``StatusChange``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse

from config.core.confirmation import staff_actor

from . import services
from .models import Partner

PERMISSION = "partners.suspend_partner"


@dataclass(frozen=True)
class StatusChange:
    """One of the two changes: its service, the word the audit log and the button use, and what staff read."""

    verb: str
    service: Callable[..., Partner]
    logged: str
    # The confirmation's question, for one partner (from its page: ``{name}``) and for a list's selection.
    ask_one: str
    ask_many: str
    # What staff read once it is done.
    done_one: str
    done_many: str


SUSPEND = StatusChange(
    verb="suspend",
    service=services.partner_suspend,
    logged="Suspended",
    ask_one="Suspend {name}? Its tokens stop working (403 ACCOUNT_SUSPENDED) and no new token is issued.",
    ask_many="Suspend these partners? Their tokens stop working at once (403 ACCOUNT_SUSPENDED) and no new "
    "token is issued until they are reactivated.",
    done_one="{name} is suspended; its token sessions were revoked.",
    done_many="Suspended {count} partner(s).",
)
REACTIVATE = StatusChange(
    verb="reactivate",
    service=services.partner_reactivate,
    logged="Reactivated",
    ask_one="Reactivate {name}? It can request new tokens; tokens from before the suspension stay revoked.",
    ask_many="Reactivate these partners? They can request new tokens; tokens from before the suspension "
    "stay revoked.",
    done_one="{name} is active again.",
    done_many="Reactivated {count} partner(s).",
)


class SuspensionAdminMixin:
    """Mixed into ``PartnerAdmin``, which provides ``_partner_for_change`` and ``_confirm``."""

    def _change_status(
        self,
        request: HttpRequest,
        change: StatusChange,
        partners: list[Partner],
        *,
        page: Partner | None = None,
    ) -> HttpResponse | None:
        """The confirmation of ``change`` for ``partners``, then the change itself: from the partner's page
        (``page``: back to it afterwards) or from the list's action menu (back to the list)."""

        def act(data: dict) -> None:
            for partner in partners:
                change.service(partner=partner, reason=data["reason"], actor=staff_actor(request))
                self.log_change(request, partner, f"{change.logged}: {data['reason']}")
            done = (
                change.done_one.format(name=page.name)
                if page
                else change.done_many.format(count=len(partners))
            )
            messages.success(request, done)

        return self._confirm(
            request,
            partners,
            permission=PERMISSION,
            title=change.ask_one.format(name=page.name) if page else change.ask_many,
            verb=change.verb,
            act=act,
            page=page,
        )

    # --- the partner page's buttons ---------------------------------------------------------------------------
    def _status_view(self, request: HttpRequest, pk: int, change: StatusChange) -> HttpResponse | None:
        partner = self._partner_for_change(request, pk, permission=PERMISSION)
        return self._change_status(request, change, [partner], page=partner)

    def suspend_view(self, request: HttpRequest, pk: int):
        return self._status_view(request, pk, SUSPEND)

    def reactivate_view(self, request: HttpRequest, pk: int):
        return self._status_view(request, pk, REACTIVATE)

    # --- bulk actions: the confirmation with a reason first, then the action ------------------------------------
    @admin.action(description="Suspend (revokes their tokens)", permissions=["suspend_partner"])
    def suspend_action(self, request, queryset):
        return self._change_status(request, SUSPEND, list(queryset.order_by("name")))

    @admin.action(description="Reactivate", permissions=["suspend_partner"])
    def reactivate_action(self, request, queryset):
        return self._change_status(request, REACTIVATE, list(queryset.order_by("name")))
