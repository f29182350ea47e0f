"""The partner admin's credentials: the live pair shown as hints, provisioning and rotation, and the page that
shows a new secret once (POST, redirect, then a GET that takes the secret out of the session)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from config.core.keys import seal, unseal

from . import services
from .models import Partner

SECRETS_ONCE_KEY = "partners_admin_secrets_once"
_SESSION_SEAL = "admin client secret shown once v1"


class CredentialsAdminMixin:
    """Mixed into ``PartnerAdmin``, which provides ``_partner_for_change`` and ``_confirm``."""

    def credential_urls(self) -> list:
        return [
            path(
                "credentials/",
                self.admin_site.admin_view(self.credentials_once_view),
                name="partners_partner_credentials_once",
            ),
            path(
                "<int:pk>/rotate/",
                self.admin_site.admin_view(self.rotate_view),
                name="partners_partner_rotate",
            ),
        ]

    @admin.display(description="client_id", ordering="credential__client_id")
    def client_id(self, obj: Partner) -> str:
        credential = getattr(obj, "credential", None)
        return credential.client_id if credential else "—"

    @admin.display(description="client_secret")
    def secret_hint(self, obj: Partner) -> str:
        credential = getattr(obj, "credential", None)
        if not credential:
            return "—"
        rotated = (
            credential.rotated_at.strftime("%Y-%m-%d %H:%M UTC") if credential.rotated_at else "never rotated"
        )
        return f"sec_…{credential.secret_last4} (stored as a digest only; {rotated})"

    # --- provisioning: the secret is shown once, in the response to the save ----------------------------
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:
            request._issued_credentials = services.credentials_issue(partner=obj)

    def response_add(self, request, obj, post_url_continue=None):
        issued = getattr(request, "_issued_credentials", None)
        if issued is None:
            return super().response_add(request, obj, post_url_continue)
        return self._show_secrets(request, [issued], title=f"Partner {obj.name} created")

    def _show_secrets(self, request, issued_list, *, title: str) -> HttpResponseRedirect:
        """POST → redirect → the secrets page, which reads them from the session once. A reload of that page
        (or of the POST's answer) never provisions or rotates again, and never shows a secret twice."""
        request.session[SECRETS_ONCE_KEY] = {
            "title": title,
            "items": [
                {
                    "partner_pk": item.partner.pk,
                    "partner_name": item.partner.name,
                    "partner_id": item.partner.public_id,
                    "client_id": client_id,
                    # The session (a database row) holds the secret only sealed, like every stored copy of it.
                    "client_secret": seal(secret, purpose=_SESSION_SEAL, aad=client_id.encode()),
                }
                for item in issued_list
                # A new partner gets both pairs at once: the test-mode pair is a row of its own.
                for client_id, secret in (
                    (item.client_id, item.client_secret),
                    (item.test_client_id, item.test_client_secret),
                )
                if client_id
            ],
        }
        return HttpResponseRedirect(reverse("admin:partners_partner_credentials_once"))

    def credentials_once_view(self, request: HttpRequest):
        # Only staff who may provision or rotate ever put secrets there; nobody else reads the page.
        if not (self.has_add_permission(request) or self.has_rotate_credentials_permission(request)):
            raise PermissionDenied
        shown = request.session.pop(SECRETS_ONCE_KEY, None)
        if shown:
            try:
                items = [
                    {
                        **item,
                        "client_secret": unseal(
                            item["client_secret"], purpose=_SESSION_SEAL, aad=item["client_id"].encode()
                        ),
                    }
                    for item in shown["items"]
                ]
            except (KeyError, ValueError):
                shown = None  # sealed under a key the service no longer has: rotate again
            else:
                shown = {**shown, "items": items}
        context = {
            **self.admin_site.each_context(request),
            "title": shown["title"] if shown else "Secrets already shown",
            "issued_list": shown["items"] if shown else [],
            "already_shown": shown is None,
            "opts": self.model._meta,
            "changelist_url": reverse("admin:partners_partner_changelist"),
        }
        response = TemplateResponse(request, "admin/partners/partner/credentials_once.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def rotate_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk, permission="partners.rotate_credentials")

        def act(data: dict) -> HttpResponseRedirect:
            issued = services.credentials_rotate(partner=partner)
            self.log_change(request, partner, f"Rotated credentials: {data['reason']}")
            return self._show_secrets(request, [issued], title=f"New secret for {partner.name}")

        return self._confirm(
            request,
            [partner],
            permission="partners.rotate_credentials",
            title=f"Rotate the credentials of {partner.name}? The client_id stays; the old secret and every "
            "token issued with it stop working at once.",
            verb="rotate",
            act=act,
            page=partner,
        )

    @admin.action(
        description="Rotate credentials (new secrets are shown once)", permissions=["rotate_credentials"]
    )
    def rotate_credentials_action(self, request, queryset):
        partners = list(queryset.order_by("name"))

        def act(data: dict) -> HttpResponseRedirect:
            issued = [services.credentials_rotate(partner=p) for p in partners]
            for item in issued:
                self.log_change(request, item.partner, f"Rotated credentials: {data['reason']}")
            return self._show_secrets(request, issued, title="New secrets")

        return self._confirm(
            request,
            partners,
            permission="partners.rotate_credentials",
            title="Rotate the credentials of these partners? Their old secrets and every token issued with them "
            "stop working at once; the new secrets are shown once.",
            verb="rotate",
            act=act,
        )
