"""Staff admin for partners: the partner page, suspension, portal invitations, token sessions, the audit list.

Provisioning and rotation, whose secrets are shown once, are in ``admin_credentials``; the test-mode pair in
``admin_testmode``."""

from django.contrib import admin, messages
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from config.core.admin_permissions import require, staff_may
from config.core.confirmation import confirm
from config.core.history_admin import ReadOnlyAdmin, status_history_table

from . import portal_services, session_services
from .admin_credentials import CredentialsAdminMixin
from .admin_suspension import SuspensionAdminMixin
from .admin_testmode import TestCredentialsAdminMixin
from .models import Partner, PortalUser, TokenSession
from .selectors import payment_readiness


class SessionsWrittenFirst:
    """Pages that list or count token sessions: the sessions still waiting in Redis for the batched writer
    are written to the database first, so staff see every token issued so far. Only a page being shown to someone
    who may see it does this: a POST (an action, a save) writes nothing but what it is for."""

    def _sessions_written(self, request) -> None:
        if request.method == "GET" and self.has_view_or_change_permission(request):
            session_services.token_sessions_flush()

    def changelist_view(self, request, extra_context=None):
        self._sessions_written(request)
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        self._sessions_written(request)
        return super().change_view(request, object_id, form_url, extra_context)


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


admin.site.site_header = "Ticket Buy-Back · Staff admin"
admin.site.site_title = "Ticket Buy-Back staff"
admin.site.index_title = "Partners, catalog, orders and payouts"
# Wide change lists (orders, charges, payouts) need the whole width more than a second menu.
admin.site.enable_nav_sidebar = False


# Not registered here: the back office at the top of the house registers it once, with the partner's payment
# methods.
class PartnerAdmin(
    SessionsWrittenFirst,
    CredentialsAdminMixin,
    TestCredentialsAdminMixin,
    SuspensionAdminMixin,
    admin.ModelAdmin,
):
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
        "status_history",
        "recent_sessions",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("name", "contact_email", "public_id", "status", "suspended_reason")}),
        ("API credentials", {"fields": ("client_id", "secret_hint", "test_client_id", "test_secret_hint")}),
        ("Payment readiness", {"fields": ("readiness",)}),
        ("Status history", {"fields": ("status_history",)}),
        ("Token sessions", {"fields": ("recent_sessions",)}),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )
    actions = ("rotate_credentials_action", "suspend_action", "reactivate_action")
    # The payouts app adds the payment-method inlines (payouts/backoffice/admin/): partners does not import it.
    inlines = (PortalUserInline,)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else ()  # the add form stays the plain provisioning form

    change_form_template = "admin/partners/partner/change_form.html"

    @admin.display(description="Suspensions and reactivations")
    def status_history(self, obj: Partner) -> str:
        return status_history_table(obj.status_history.all()) if obj.pk else "—"

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

    # --- object tools (buttons on the change page) -------------------------------------------------------
    def get_urls(self):
        custom = [
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
        return custom + self.credential_urls() + self.test_credential_urls() + super().get_urls()

    # --- permissions: each staff action asks for its own (docs/staff-guide.md "Staff permissions and groups") --------------------------
    def has_rotate_credentials_permission(self, request: HttpRequest, obj: Partner | None = None) -> bool:
        return staff_may(request, "partners.rotate_credentials")

    def has_suspend_partner_permission(self, request: HttpRequest, obj: Partner | None = None) -> bool:
        return staff_may(request, "partners.suspend_partner")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # The page's buttons, each shown only to staff who may take it.
        context.update(
            can_rotate=self.has_rotate_credentials_permission(request),
            can_suspend=self.has_suspend_partner_permission(request),
            can_invite=obj is not None and self.has_change_permission(request, obj),
        )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _partner_for_change(self, request: HttpRequest, pk: int, *, permission: str = "") -> Partner:
        """The partner a button acts on, after checking the permission (on the confirmation page and again
        on its POST). Without ``permission`` the model's change permission is needed."""
        if permission:
            require(request, permission)
        partner = get_object_or_404(Partner, pk=pk)
        if not permission and not self.has_change_permission(request, partner):
            raise PermissionDenied
        return partner

    def _confirm(
        self,
        request: HttpRequest,
        partners,
        *,
        permission: str,
        title: str,
        verb: str,
        act,
        page: Partner | None = None,
    ) -> HttpResponse | None:
        """The staff confirmation of a change to ``partners``: from the partner's page (``page``: back to it
        afterwards) or from the list's action menu (back to the list)."""
        url = reverse("admin:partners_partner_change", args=[page.pk]) if page else ""
        return confirm(
            request,
            self,
            permissions=(permission,),
            objects=list(partners),
            describe=lambda partner: (partner.name, partner.public_id, partner.get_status_display()),
            columns=("Partner", "Id", "Status"),
            title=title,
            submit=f"Yes, {verb}",
            reason_label="Reason (kept in the audit log and the partner's history)",
            testid=f"confirm-{verb.replace(' ', '-')}",
            act=act,
            back_url=url,
            done_url=url,
            record_label=page.name if page else "",
        )

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


@admin.register(TokenSession)
class TokenSessionAdmin(SessionsWrittenFirst, admin.ModelAdmin):
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
class StaffActionAdmin(ReadOnlyAdmin):
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
