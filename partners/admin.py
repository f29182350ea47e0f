"""Staff admin for partners: provisioning with a secret shown once, rotation, suspension, sessions."""

from django.contrib import admin, messages
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from . import portal_services, services
from .admin_testmode import TestCredentialsAdminMixin
from .models import Partner, PortalUser, TokenSession
from .selectors import payment_readiness


class PortalUserInline(admin.TabularInline):
    """People who can sign in to the portal for this partner; new ones are invited (button above)."""

    model = PortalUser
    fields = ("email", "password_set", "last_login", "invited_at")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = True
    verbose_name_plural = "Portal users (delete a row to remove portal access)"

    @admin.display(description="E-mail")
    def email(self, obj: PortalUser) -> str:
        return obj.user.email if obj.user_id else "—"

    @admin.display(description="Password set", boolean=True)
    def password_set(self, obj: PortalUser) -> bool | None:
        return obj.user.has_usable_password() if obj.user_id else None

    @admin.display(description="Last sign-in")
    def last_login(self, obj: PortalUser):
        return obj.user.last_login if obj.user_id else None


SECRETS_ONCE_KEY = "partners_admin_secrets_once"


def _with_reason(what: str, request: HttpRequest) -> str:
    """The audit line of a staff action: what was done and, when the staff member gave one, why."""
    reason = request.POST.get("reason", "").strip()[:255]
    return f"{what}: {reason}" if reason else what


admin.site.site_header = "Ticket Buy-Back · Staff admin"
admin.site.site_title = "Ticket Buy-Back staff"
admin.site.index_title = "Partners, catalog, orders and payouts"
# Wide change lists (orders, charges, payouts) need the whole width more than a second menu.
admin.site.enable_nav_sidebar = False


@admin.register(Partner)
class PartnerAdmin(TestCredentialsAdminMixin, admin.ModelAdmin):
    list_display = ("name", "public_id", "status", "client_id", "readiness", "live_sessions", "created_at")
    list_filter = ("status", "created_at")
    search_fields = (
        "name",
        "public_id",
        "contact_email",
        "credential__client_id",
        "test_credential__client_id",
    )
    ordering = ("name",)
    readonly_fields = (
        "public_id",
        "client_id",
        "secret_hint",
        "test_client_id",
        "test_secret_hint",
        "readiness",
        "status",
        "suspended_reason",
        "recent_sessions",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("name", "contact_email", "public_id", "status", "suspended_reason")}),
        ("API credentials", {"fields": ("client_id", "secret_hint", "test_client_id", "test_secret_hint")}),
        ("Payment readiness", {"fields": ("readiness",)}),
        ("Token sessions", {"fields": ("recent_sessions",)}),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )
    actions = ("rotate_credentials_action", "suspend_action", "reactivate_action")
    # The payouts app adds the payment-method inlines (payouts/admin/): partners does not import it.
    inlines = (PortalUserInline,)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else ()  # the add form stays the plain provisioning form

    change_form_template = "admin/partners/partner/change_form.html"

    def get_queryset(self, request):
        now = timezone.now()
        return (
            super()
            .get_queryset(request)
            .select_related("credential", "test_credential", "payout_account", "credit_card")
            .annotate(
                live_session_count=Count(
                    "token_sessions",
                    filter=Q(token_sessions__revoked_at__isnull=True, token_sessions__expires_at__gt=now),
                )
            )
        )

    # --- display ---------------------------------------------------------------------------------------
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

    @admin.display(description="Payment readiness")
    def readiness(self, obj: Partner) -> str:
        if obj.pk is None:
            return "—"
        missing = payment_readiness(partner_pk=obj.pk).missing
        if not missing:
            return format_html('<span style="color:#1a7f37">{}</span>', "✔ ready")
        return format_html('<span style="color:#b35900">missing: {}</span>', ", ".join(missing))

    @admin.display(description="Live tokens", ordering="live_session_count")
    def live_sessions(self, obj: Partner) -> int:
        return getattr(obj, "live_session_count", 0)

    @admin.display(description="Recent token sessions")
    def recent_sessions(self, obj: Partner) -> str:
        if obj.pk is None:
            return "—"
        now = timezone.now()
        rows = obj.token_sessions.order_by("-created_at")[:20]
        if not rows:
            return "No token has been issued yet."

        def state(s: TokenSession) -> str:
            if s.revoked_at:
                return f"revoked ({s.revoked_reason})"
            return "live" if s.expires_at > now else "expired"

        body = format_html_join(
            "",
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    s.session_id,
                    s.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    s.expires_at.strftime("%H:%M:%S"),
                    s.client_ip or "",
                    state(s),
                )
                for s in rows
            ),
        )
        return format_html(
            "<table><thead><tr><th>Session</th><th>Issued (UTC)</th><th>Expires</th><th>IP</th><th>State</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            body,
        )

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
                    "client_secret": secret,
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
        shown = request.session.pop(SECRETS_ONCE_KEY, None)
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

    # --- object tools (buttons on the change page) -------------------------------------------------------
    def get_urls(self):
        custom = [
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
            path(
                "<int:pk>/suspend/",
                self.admin_site.admin_view(self.suspend_view),
                name="partners_partner_suspend",
            ),
            path(
                "<int:pk>/reactivate/",
                self.admin_site.admin_view(self.reactivate_view),
                name="partners_partner_reactivate",
            ),
            path(
                "<int:pk>/invite-portal-user/",
                self.admin_site.admin_view(self.invite_portal_user_view),
                name="partners_partner_invite_portal_user",
            ),
        ]
        return custom + self.test_credential_urls() + super().get_urls()

    def _partner_for_change(self, request: HttpRequest, pk: int) -> Partner:
        partner = get_object_or_404(Partner, pk=pk)
        if not self.has_change_permission(request, partner):
            raise PermissionDenied
        return partner

    def _confirm(self, request, partner: Partner, *, action: str, question: str, with_reason: bool = False):
        context = {
            **self.admin_site.each_context(request),
            "title": question,
            "partner": partner,
            "action": action,
            "with_reason": with_reason,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/partners/partner/confirm_action.html", context)

    def rotate_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk)
        if request.method != "POST":
            return self._confirm(
                request,
                partner,
                action="rotate",
                question=f"Rotate the credentials of {partner.name}? The client_id stays; the old secret and every "
                "token issued with it stop working at once.",
                with_reason=True,
            )
        issued = services.credentials_rotate(partner=partner)
        self.log_change(request, partner, _with_reason("Rotated credentials", request))
        return self._show_secrets(request, [issued], title=f"New secret for {partner.name}")

    def suspend_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk)
        if request.method != "POST":
            return self._confirm(
                request,
                partner,
                action="suspend",
                question=f"Suspend {partner.name}? Its tokens stop working (403 ACCOUNT_SUSPENDED) and no new token is issued.",
                with_reason=True,
            )
        services.partner_suspend(partner=partner, reason=request.POST.get("reason", "")[:255])
        self.log_change(request, partner, _with_reason("Suspended", request))
        messages.success(request, f"{partner.name} is suspended; its token sessions were revoked.")
        return HttpResponseRedirect(reverse("admin:partners_partner_change", args=[partner.pk]))

    def reactivate_view(self, request: HttpRequest, pk: int):
        partner = self._partner_for_change(request, pk)
        if request.method != "POST":
            return self._confirm(
                request,
                partner,
                action="reactivate",
                question=f"Reactivate {partner.name}? It can request new tokens; tokens from before the suspension stay revoked.",
                with_reason=True,
            )
        services.partner_reactivate(partner=partner)
        self.log_change(request, partner, _with_reason("Reactivated", request))
        messages.success(request, f"{partner.name} is active again.")
        return HttpResponseRedirect(reverse("admin:partners_partner_change", args=[partner.pk]))

    def invite_portal_user_view(self, request: HttpRequest, pk: int):
        """Staff invite a person to the portal: a set-password link is e-mailed to them."""
        partner = self._partner_for_change(request, pk)
        email, error = request.POST.get("email", "").strip(), ""
        if request.method == "POST":
            try:
                validate_email(email)
                portal_services.portal_user_invite(partner=partner, email=email)
            except ValidationError:
                error = "Enter a valid e-mail address."
            except portal_services.PortalUserExists as exc:
                error = str(exc)
            else:
                self.log_change(request, partner, f"Invited portal user {email}")
                messages.success(request, f"{email} was invited; a set-password link is on its way.")
                return HttpResponseRedirect(reverse("admin:partners_partner_change", args=[partner.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Invite a portal user for {partner.name}",
            "partner": partner,
            "email": email,
            "error": error,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "portal/admin_invite.html", context)

    # --- bulk actions: a confirmation page with a reason first, then the action ----------------------------
    def _confirm_bulk(self, request, queryset, *, action: str, question: str):
        context = {
            **self.admin_site.each_context(request),
            "title": question,
            "partners": list(queryset),
            "action": action,
            "action_name": request.POST.get("action", ""),
            "select_across": request.POST.get("select_across", "0"),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/partners/partner/confirm_bulk_action.html", context)

    @admin.action(description="Rotate credentials (new secrets are shown once)")
    def rotate_credentials_action(self, request, queryset):
        if request.POST.get("confirmed") != "yes":
            return self._confirm_bulk(
                request,
                queryset,
                action="rotate",
                question="Rotate the credentials of these partners? Their old secrets and every token issued "
                "with them stop working at once; the new secrets are shown once.",
            )
        issued = [services.credentials_rotate(partner=p) for p in queryset]
        for item in issued:
            self.log_change(request, item.partner, _with_reason("Rotated credentials", request))
        return self._show_secrets(request, issued, title="New secrets")

    @admin.action(description="Suspend (revokes their tokens)")
    def suspend_action(self, request, queryset):
        if request.POST.get("confirmed") != "yes":
            return self._confirm_bulk(
                request,
                queryset,
                action="suspend",
                question="Suspend these partners? Their tokens stop working at once (403 ACCOUNT_SUSPENDED) and "
                "no new token is issued until they are reactivated.",
            )
        reason = request.POST.get("reason", "").strip()[:255] or "suspended by staff"
        for partner in queryset:
            services.partner_suspend(partner=partner, reason=reason)
            self.log_change(request, partner, _with_reason("Suspended", request))
        messages.success(request, f"Suspended {queryset.count()} partner(s).")

    @admin.action(description="Reactivate")
    def reactivate_action(self, request, queryset):
        for partner in queryset:
            services.partner_reactivate(partner=partner)
            self.log_change(request, partner, "Reactivated")
        messages.success(request, f"Reactivated {queryset.count()} partner(s).")


@admin.register(TokenSession)
class TokenSessionAdmin(admin.ModelAdmin):
    list_display = (
        "session_id",
        "partner",
        "created_at",
        "expires_at",
        "revoked_at",
        "revoked_reason",
        "client_ip",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "created_at")
    search_fields = ("session_id", "partner__name", "partner__public_id")
    list_select_related = ("partner",)
    readonly_fields = [f.name for f in TokenSession._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LogEntry)
class StaffActionAdmin(admin.ModelAdmin):
    """The audit list of staff actions: who did what to which record, when, and the reason they gave."""

    list_display = ("action_time", "user", "action", "content_type", "object_link", "change_message_text")
    list_filter = ("action_flag", "content_type", "action_time")
    search_fields = ("user__username", "user__email", "object_repr", "object_id", "change_message")
    list_select_related = ("user", "content_type")
    date_hierarchy = "action_time"
    ordering = ("-action_time",)

    @admin.display(description="Action", ordering="action_flag")
    def action(self, obj: LogEntry) -> str:
        return {ADDITION: "Added", CHANGE: "Changed", DELETION: "Deleted"}.get(obj.action_flag, "—")

    @admin.display(description="Record")
    def object_link(self, obj: LogEntry) -> str:
        if obj.action_flag == DELETION or not obj.get_admin_url():
            return obj.object_repr
        return format_html(
            '<a href="/admin/{}">{}</a>', obj.get_admin_url().removeprefix("/admin/"), obj.object_repr
        )

    @admin.display(description="What and why")
    def change_message_text(self, obj: LogEntry) -> str:
        return obj.get_change_message()

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
