"""The partner admin's part of test mode (docs/partners/test-mode.md "Test mode"): the test-mode pair shown next to the live
one, and its own rotation (the new secret is shown once, like the live one's)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import path

from . import services
from .models import Partner


class TestCredentialsAdminMixin:
    """Mixed into ``PartnerAdmin``, which provides ``_partner_for_change`` and ``_confirm``, and ``_show_secrets``
    (``admin_credentials``)."""

    @admin.display(description="test client_id")
    def test_client_id(self, obj: Partner) -> str:
        credential = getattr(obj, "test_credential", None)
        return credential.client_id if credential else "—"

    @admin.display(description="test client_secret")
    def test_secret_hint(self, obj: Partner) -> str:
        credential = getattr(obj, "test_credential", None)
        if not credential or not credential.secret_last4:
            return "none issued yet: rotate the test credentials to issue one"
        rotated = (
            credential.rotated_at.strftime("%Y-%m-%d %H:%M UTC") if credential.rotated_at else "never rotated"
        )
        return f"sec_test_…{credential.secret_last4} (stored as a digest only; {rotated})"

    def test_credential_urls(self) -> list:
        return [
            path(
                "<int:pk>/rotate-test/",
                self.admin_site.admin_view(self.rotate_test_view),
                name="partners_partner_rotate_test",
            )
        ]

    def rotate_test_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk, permission="partners.rotate_credentials")

        def act(data: dict) -> HttpResponseRedirect:
            issued = services.credentials_rotate(partner=partner, livemode=False)
            self.log_change(request, partner, f"Rotated test-mode credentials: {data['reason']}")
            return self._show_secrets(request, [issued], title=f"New test-mode secret for {partner.name}")

        return self._confirm(
            request,
            [partner],
            permission="partners.rotate_credentials",
            title=f"Rotate the test-mode credentials of {partner.name}? The test client_id stays; the old test "
            "secret and every test-mode token stop working. Live credentials are not touched.",
            verb="rotate",
            act=act,
            page=partner,
        )
