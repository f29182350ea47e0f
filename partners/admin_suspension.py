"""The partner admin's suspension and reactivation: the partner page's buttons and the list's bulk actions, each
behind the staff confirmation with a reason (kept in the partner's status history and the audit log)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest

from config.core.confirmation import staff_actor

from . import services
from .models import Partner


class SuspensionAdminMixin:
    """Mixed into ``PartnerAdmin``, which provides ``_partner_for_change`` and ``_confirm``."""

    def _suspend(self, request: HttpRequest, partners: list[Partner], *, reason: str) -> None:
        for partner in partners:
            services.partner_suspend(partner=partner, reason=reason, actor=staff_actor(request))
            self.log_change(request, partner, f"Suspended: {reason}")

    def _reactivate(self, request: HttpRequest, partners: list[Partner], *, reason: str) -> None:
        for partner in partners:
            services.partner_reactivate(partner=partner, reason=reason, actor=staff_actor(request))
            self.log_change(request, partner, f"Reactivated: {reason}")

    def suspend_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk, permission="partners.suspend_partner")

        def act(data: dict) -> None:
            self._suspend(request, [partner], reason=data["reason"])
            messages.success(request, f"{partner.name} is suspended; its token sessions were revoked.")

        return self._confirm(
            request,
            [partner],
            permission="partners.suspend_partner",
            title=f"Suspend {partner.name}? Its tokens stop working (403 ACCOUNT_SUSPENDED) and no new token is issued.",
            verb="suspend",
            act=act,
            page=partner,
        )

    def reactivate_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk, permission="partners.suspend_partner")

        def act(data: dict) -> None:
            self._reactivate(request, [partner], reason=data["reason"])
            messages.success(request, f"{partner.name} is active again.")

        return self._confirm(
            request,
            [partner],
            permission="partners.suspend_partner",
            title=f"Reactivate {partner.name}? It can request new tokens; tokens from before the suspension stay revoked.",
            verb="reactivate",
            act=act,
            page=partner,
        )

    # --- bulk actions: the confirmation with a reason first, then the action ------------------------------------
    @admin.action(description="Suspend (revokes their tokens)", permissions=["suspend_partner"])
    def suspend_action(self, request, queryset):
        partners = list(queryset.order_by("name"))

        def act(data: dict) -> None:
            self._suspend(request, partners, reason=data["reason"])
            messages.success(request, f"Suspended {len(partners)} partner(s).")

        return self._confirm(
            request,
            partners,
            permission="partners.suspend_partner",
            title="Suspend these partners? Their tokens stop working at once (403 ACCOUNT_SUSPENDED) and no new "
            "token is issued until they are reactivated.",
            verb="suspend",
            act=act,
        )

    @admin.action(description="Reactivate", permissions=["suspend_partner"])
    def reactivate_action(self, request, queryset):
        partners = list(queryset.order_by("name"))

        def act(data: dict) -> None:
            for partner in partners:
                services.partner_reactivate(
                    partner=partner, reason=data["reason"], actor=staff_actor(request)
                )
                self.log_change(request, partner, f"Reactivated: {data['reason']}")
            messages.success(request, f"Reactivated {len(partners)} partner(s).")

        return self._confirm(
            request,
            partners,
            permission="partners.suspend_partner",
            title="Reactivate these partners? They can request new tokens; tokens from before the suspension "
            "stay revoked.",
            verb="reactivate",
            act=act,
        )
