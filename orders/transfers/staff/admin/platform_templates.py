"""The admin's "Platform templates": the per-platform report and every version, "Make a template from this
mail" from an ``unparsed`` case, the read-only test against the stored mail, and approval, activation and
discarding behind a confirmation with a reason (docs/staff-guide.md "Platform templates").

Every view checks its permission on every request, the confirming POST included (a forged POST gets 403):
``transfers.manage_platform_templates`` to make, test, activate or discard a version,
``transfers.approve_platform_registry`` to approve a change of sender domains or accept-link hosts (never by
its author). A POST that changes data ends with a redirect to a page read with a GET, so a reload does
nothing twice; each change is in the audit log (``LogEntry``) and the platform's history.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from config.core.admin_permissions import require, staff_may
from config.core.confirmation import confirm, staff_actor
from config.core.history_admin import ReadOnly, StatusHistoryInline
from orders.transfers.models import PlatformTemplateHistory, PlatformTemplateVersion, TransferCase
from orders.transfers.reading.selectors import approval_holds, data_in_force, registry_changes
from orders.transfers.reading.services import Refused, version_activate, version_approve, version_discard
from orders.transfers.reading.templates_store import data_dump, registry_part
from orders.transfers.reading.trial import template_trial
from orders.transfers.staff.platform_report import platforms_report
from orders.transfers.staff.platform_writing import TemplateWriting

V = PlatformTemplateVersion
MANAGE = "transfers.manage_platform_templates"
APPROVE = "transfers.approve_platform_registry"
MAX_PATTERN = 1000


@dataclass(frozen=True)
class Step:
    name: str
    label: str
    permission: str
    title: str
    effects: tuple[str, ...]
    submit: str
    kind: str = "default"


STEPS = {
    s.name: s
    for s in (
        Step(
            "approve",
            "Approve registry change",
            APPROVE,
            "Approve this version's sender domains and accept-link hosts?",
            (
                "mail from these sender domains will count as this platform's once the version is activated;",
                "accept links are recorded only for these hosts;",
                "your approval (you are not the version's author) is kept in the platform's history.",
            ),
            "Yes, approve",
        ),
        Step(
            "activate",
            "Activate",
            MANAGE,
            "Put this version in force?",
            (
                "it is tested again against every stored authentic message of the platform: activation is refused "
                "if one would be received automatically against a different staff outcome;",
                "the version in force now is superseded; every new message is read with this one;",
                "the platform's open unparsed cases (and those of its first mail from an unknown sender) are "
                "processed again (authentication, reading, matching): an "
                "order moves only when everything holds, and each case records the version that decided it.",
            ),
            "Yes, activate",
        ),
        Step(
            "discard",
            "Discard",
            MANAGE,
            "Discard this draft version?",
            ("the version stays in the history, never to be activated.",),
            "Yes, discard",
            "danger",
        ),
    )
}


class PlatformTemplateHistoryInline(StatusHistoryInline):
    model = PlatformTemplateHistory
    verbose_name_plural = "History"


@admin.register(PlatformTemplateVersion)
class PlatformTemplateVersionAdmin(TemplateWriting, ReadOnly, admin.ModelAdmin):
    list_display = (
        "version_link",
        "state",
        "registry_column",
        "created_by",
        "created_at",
        "reason",
    )
    list_filter = ("platform", "state", "source")
    search_fields = ("platform", "reason", "created_by")
    inlines = (PlatformTemplateHistoryInline,)
    change_list_template = "admin/transfers/platformtemplateversion/change_list.html"
    change_form_template = "admin/transfers/platformtemplateversion/change_form.html"
    fieldsets = (
        (None, {"fields": ("platform", "version", "state", "source", "reason", "created_by", "created_at")}),
        ("What decides authenticity", {"fields": ("registry",)}),
        (
            "Four eyes and activation",
            {"fields": ("approved_by", "approved_at", "activated_by", "activated_at", "learned_case")},
        ),
        ("The template file", {"fields": ("as_file",)}),
    )

    def get_readonly_fields(self, request, obj=None):
        return [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]

    # --- display -----------------------------------------------------------------------------------------------
    @admin.display(description="Version", ordering="version")
    def version_link(self, obj: V) -> str:
        return f"{obj.platform} v{obj.version}"

    @admin.display(description="Sender domains, link hosts", ordering="registry_change")
    def registry_column(self, obj: V):
        """Whether the version changes what makes a mail authentic (a draft: against what is in force now), in
        words; "no change" is no fault."""
        if not registry_changes(obj):
            return format_html('<span class="quiet">{}</span>', "no change")
        if obj.state != V.State.DRAFT:
            return f"changed, approved by {obj.approved_by or '—'}"
        if approval_holds(obj):
            return f"changes, approved by {obj.approved_by}"
        return format_html('<strong class="bad">{}</strong>', "changes: waits for a second approval")

    @admin.display(description="Sender domains and accept-link hosts")
    def registry(self, obj: V):
        mine = registry_part(obj.data)
        before = registry_part(data_in_force(obj.platform)) if obj.state == V.State.DRAFT else mine
        rows = []
        for key in mine:
            changed = mine[key] != before[key]
            rows.append(
                format_html(
                    '<tr><th>{}</th><td class="{}">{}</td><td>{}</td></tr>',
                    key.replace("_", " "),
                    "bad" if changed else "",
                    ", ".join(mine[key]) or "—",
                    f"(in force: {', '.join(before[key]) or '—'})" if changed else "",
                )
            )
        note = (
            format_html('<p class="errornote" data-testid="registry-change">{}</p>', self._registry_note(obj))
            if registry_changes(obj)
            else ""
        )
        return format_html(
            '<table class="transfer-evidence" data-testid="registry">{}</table>{}',
            format_html("".join(["{}"] * len(rows)), *rows),
            note,
        )

    def _registry_note(self, obj: V) -> str:
        if obj.state != V.State.DRAFT or approval_holds(obj):
            return f"Changes what makes a mail authentic: approved by {obj.approved_by or '—'}."
        if obj.approved_by:
            return (
                f"Changes what makes a mail authentic: approved by {obj.approved_by} against other sender domains "
                "or accept-link hosts than those in force now; a second staff member must approve it again "
                "before activation."
            )
        return (
            "Changes what makes a mail authentic: a second staff member (not its author, "
            f"{obj.created_by}) must approve it before activation."
        )

    @admin.display(description="Made from the mail of")
    def learned_case(self, obj: V):
        if obj.learned_from_id is None:
            return "—"
        url = reverse("admin:transfers_transfercase_change", args=[obj.learned_from_id])
        return format_html('<a href="{}">case #{}</a>', url, obj.learned_from_id)

    @admin.display(description="YAML")
    def as_file(self, obj: V):
        return format_html('<pre data-testid="template-yaml">{}</pre>', data_dump(obj.data))

    # --- pages -------------------------------------------------------------------------------------------------
    def changelist_view(self, request, extra_context=None):
        extra_context = {
            "title": "Platform templates",
            "report": platforms_report(),
            "may_manage": staff_may(request, MANAGE),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context.update(
                title=f"{obj.platform} template, version {obj.version}",
                subtitle=f"{obj.get_state_display()} · {obj.get_source_display()}",
                version_buttons=self.buttons(request, obj),
                links=self.links(request, obj),
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def waits_for_approval(self, obj: V) -> bool:
        """A draft that changes the registry in force now without an approval against it."""
        return obj.state == V.State.DRAFT and registry_changes(obj) and not approval_holds(obj)

    def buttons(self, request: HttpRequest, obj: V) -> list[tuple[str, str, str]]:
        """(label, URL, kind) of each step staff may take on the version now: none its service would refuse
        for who they are or what is in force (the author never sees "Approve", nobody sees "Activate" while
        the registry change waits for its approval)."""
        shown = []
        waiting = self.waits_for_approval(obj)
        for name, step in STEPS.items():
            if obj.state != V.State.DRAFT or not staff_may(request, step.permission):
                continue
            if name == "approve" and (not waiting or staff_actor(request) == obj.created_by):
                continue
            if name == "activate" and waiting:
                continue
            shown.append(
                (
                    step.label,
                    reverse(f"admin:transfers_platformtemplateversion_{name}", args=[obj.pk]),
                    step.kind,
                )
            )
        return shown

    def links(self, request: HttpRequest, obj: V) -> list[tuple[str, str]]:
        if not staff_may(request, MANAGE):
            return []
        return [
            (
                "Test against the stored mail",
                reverse("admin:transfers_platformtemplateversion_test", args=[obj.pk]),
            ),
            (
                "Edit as a new version",
                reverse("admin:transfers_platformtemplateversion_edit") + f"?from={obj.pk}",
            ),
        ] + (
            [("Export the file", reverse("admin:transfers_platformtemplateversion_export", args=[obj.pk]))]
            if obj.state == V.State.ACTIVE
            else []
        )

    def get_urls(self):
        view = self.admin_site.admin_view
        custom = [
            path(
                "learn/<int:case_pk>/", view(self.learn_view), name="transfers_platformtemplateversion_learn"
            ),
            path("edit/", view(self.edit_view), name="transfers_platformtemplateversion_edit"),
            path("<int:pk>/test/", view(self.test_view), name="transfers_platformtemplateversion_test"),
            path("<int:pk>/export/", view(self.export_view), name="transfers_platformtemplateversion_export"),
            *(
                path(
                    f"<int:pk>/{name}/",
                    view(self._step(name)),
                    name=f"transfers_platformtemplateversion_{name}",
                )
                for name in STEPS
            ),
        ]
        return custom + super().get_urls()

    def _context(self, request: HttpRequest, **values) -> dict:
        return {**self.admin_site.each_context(request), "opts": self.model._meta, **values}

    # --- make a template from a case's mail ---------------------------------------------------------------------
    def test_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        require(request, MANAGE)
        version = get_object_or_404(V, pk=pk)
        trial = template_trial(platform=version.platform, data=version.data)
        activate = ""
        if version.state == V.State.DRAFT and trial.passes and not self.waits_for_approval(version):
            activate = reverse("admin:transfers_platformtemplateversion_activate", args=[pk])
        context = self._context(
            request,
            title=f"Test of {version.platform} version {version.version} against the stored mail",
            version=version,
            trial=trial,
            counts=trial.counts,
            activate_url=activate,
            waits_for_approval=self.waits_for_approval(version),
            back_url=reverse("admin:transfers_platformtemplateversion_change", args=[pk]),
        )
        return TemplateResponse(request, "admin/transfers/platformtemplateversion/test.html", context)

    def export_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The version in force as its file. A draft or a discarded version never: the file would load as
        the platform's version 1 with no approval."""
        require(request, MANAGE)
        version = get_object_or_404(V, pk=pk, state=V.State.ACTIVE)
        response = HttpResponse(data_dump(version.data), content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{version.platform}.yaml"'
        return response

    # --- approve, activate, discard -----------------------------------------------------------------------------
    def _step(self, name: str):
        def view(request: HttpRequest, pk: int) -> HttpResponse:
            return self.step_view(request, pk, name=name)

        return view

    def step_view(self, request: HttpRequest, pk: int, *, name: str) -> HttpResponse:
        """A version's button: the shared staff confirmation (its permission checked on every request, a reason,
        a single-use page), the step, then the version's page with a GET."""
        step = STEPS[name]
        require(request, step.permission)
        version = get_object_or_404(V, pk=pk)
        version_url = reverse("admin:transfers_platformtemplateversion_change", args=[pk])
        service = {"approve": version_approve, "activate": version_activate, "discard": version_discard}[name]

        def act(data: dict) -> HttpResponse:
            reason = data["reason"]
            try:
                done = service(version_pk=pk, actor=staff_actor(request), reason=reason)
            except Refused as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.log_change(request, done, f"{step.label}: {reason}")
                self.message_user(
                    request,
                    f"{step.label}: {done.platform} version {done.version}. {reason}",
                    messages.SUCCESS,
                )
            return HttpResponseRedirect(version_url)

        return confirm(
            request,
            self,
            permissions=[step.permission],
            objects=[version],
            describe=lambda v: (v.platform, f"v{v.version}", v.get_state_display(), v.created_by, v.reason),
            columns=("Platform", "Version", "State", "Made by", "Why"),
            title=step.title,
            effects=step.effects,
            submit=step.submit,
            reason_label="Reason (kept in the platform's history)",
            testid=f"confirm-{name}",
            act=act,
            back_url=version_url,
            done_url=version_url,
            record_label=f"{version.platform} v{version.version}",
            arrives_by_post=True,
        )


def learn_link(request: HttpRequest, case: TransferCase) -> str:
    """The case page's "Make a template from this mail" link, for an open unparsed case with its order."""
    if (
        case.kind != TransferCase.Kind.UNPARSED
        or case.state not in TransferCase.OPEN_STATES
        or case.order_id is None
        or case.message_id is None
        or not staff_may(request, MANAGE)
    ):
        return ""
    return reverse("admin:transfers_platformtemplateversion_learn", args=[case.pk])


def new_platform_link(request: HttpRequest, case: TransferCase) -> tuple[str, str] | None:
    """The case page's link to the registry entry of the platform whose first mail opened an open
    ``unverified`` case (its sender no platform's): "A new platform" pre-filled from the mail, or a new
    version of the order's platform with the sender added when it has an entry."""
    found = case.details.get("new_platform") if isinstance(case.details, dict) else None
    if (
        not found
        or case.kind != TransferCase.Kind.UNVERIFIED
        or case.state not in TransferCase.OPEN_STATES
        or not staff_may(request, MANAGE)
    ):
        return None
    url = reverse("admin:transfers_platformtemplateversion_edit") + f"?case={case.pk}"
    if data_in_force(found.get("platform", "")) is not None:
        return f"Add this sender to {found['platform']}", url
    return "A new platform", url
