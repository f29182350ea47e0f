"""The admin's pages where staff write a template: "Make a template from this mail" from an ``unparsed`` case
(numbered lines, a proposal per field from the order's own values, corrected by picking a line or editing a
pattern) and the editor of a new version. Mixed into the platform template versions' admin
(``admin.platform_templates``), whose permission checks and confirmations they share."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from config.core.admin_permissions import require
from config.core.confirmation import staff_actor
from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from orders.transfers.reading import learn as learning
from orders.transfers.reading import new_platform, platforms
from orders.transfers.reading.layout import pattern_for_line
from orders.transfers.reading.selectors import data_in_force, version_in_force
from orders.transfers.reading.services import version_create
from orders.transfers.reading.templates_store import TemplateInvalid, data_dump, data_load, registry_part

V = PlatformTemplateVersion
MANAGE = "transfers.manage_platform_templates"
MAX_PATTERN = 1000


class TemplateWriting:
    """``learn_view`` and ``edit_view`` of ``PlatformTemplateVersionAdmin``."""

    def learn_view(self, request: HttpRequest, case_pk: int) -> HttpResponse:
        require(request, MANAGE)
        case = get_object_or_404(
            TransferCase.objects.select_related("message", "order__event__venue"), pk=case_pk
        )
        raw = raw_read(case.message) if case.message else None
        if case.kind != TransferCase.Kind.UNPARSED or case.order is None or raw is None:
            raise Http404("Only an unparsed case with its order and its raw mail can teach a template.")
        platform = case.message.platform
        base = data_in_force(platform)
        if base is None:
            raise Http404("The platform has no registry entry.")
        mail = platforms.mail_text(raw)
        order = case.order
        learned = learning.learn(
            text=mail.text,
            subject=mail.subject,
            order=order,
            accept_hosts=tuple(registry_part(base)["accept_link_hosts"]),
        )
        avoid = learning.own_values(order, mail.text)
        kind = request.POST.get("kind", "transfer_offer")
        kind = kind if kind in platforms.KINDS else "transfer_offer"
        subject_pattern = request.POST.get("subject_pattern", learned.subject_pattern)[:MAX_PATTERN]
        rows = []
        chosen: dict[str, str] = {}
        for name in learning.FIELDS:
            if name in ("section", "row", "seats") and order.general_admission:
                continue
            proposal = learned.proposals.get(name) or learning.Proposal(name, None, "")
            pattern, line, note = proposal.pattern, proposal.line, ""
            if request.method == "POST":
                pattern = request.POST.get(f"pattern_{name}", "")[:MAX_PATTERN].strip()
                picked, line_text = (
                    request.POST.get(f"picked_{name}", ""),
                    request.POST.get(f"line_{name}", ""),
                )
                line = (
                    int(line_text)
                    if line_text.isdigit() and 1 <= int(line_text) <= len(learned.lines)
                    else None
                )
                if line is not None and line_text != picked:  # staff picked another line: read it instead
                    pattern, note = pattern_for_line(learned.lines, line, name, avoid=avoid)
                elif pattern:
                    line = learning.line_of(pattern, mail.text)
            found, problem = learning.read_with(pattern, mail.text)
            problem = problem if pattern else note
            chosen[name] = pattern
            rows.append(
                {"proposal": proposal, "pattern": pattern, "line": line, "found": found, "problem": problem}
            )
        subject_ok = (
            bool(learning.read_with(f"(?P<value>{subject_pattern})", mail.subject)[0])
            if subject_pattern
            else False
        )
        error = ""
        if request.method == "POST" and request.POST.get("do") == "save":
            reason = request.POST.get("reason", "").strip()[:500]
            data = dict(base)
            kinds = dict(data.get("kinds") or {})
            kinds[kind] = learning.kind_data(
                subject_pattern=subject_pattern, patterns=chosen, general_admission=order.general_admission
            )
            data["kinds"] = kinds
            if learned.start_format and learned.start_format not in (data.get("start_formats") or []):
                data["start_formats"] = [
                    *(data.get("start_formats") or platforms.DEFAULT_START_FORMATS),
                    learned.start_format,
                ]
            if not subject_ok:
                error = "The subject pattern does not recognise this mail's subject."
            elif not reason:
                error = "Say why: the reason is kept in the platform's history."
            else:
                active = version_in_force(platform)
                try:
                    created = version_create(
                        platform=platform,
                        data=data,
                        actor=staff_actor(request),
                        reason=reason,
                        learned_from=case,
                        based_on=active.version if active else None,
                    )
                except TemplateInvalid as exc:
                    error = str(exc)
                else:
                    self.log_change(request, created, f"Made from the mail of case #{case.pk}: {reason}")
                    self.message_user(
                        request,
                        f"Draft version {created.version} of {platform} saved. Test it against the stored mail.",
                        messages.SUCCESS,
                    )
                    return HttpResponseRedirect(
                        reverse("admin:transfers_platformtemplateversion_test", args=[created.pk])
                    )
        context = self._context(
            request,
            title=f"Make a {platform} template from case #{case.pk}",
            case=case,
            order=order,
            platform=platform,
            lines=list(enumerate(learned.lines, start=1)),
            subject=mail.subject,
            subject_pattern=subject_pattern,
            subject_ok=subject_ok,
            kinds=platforms.KINDS,
            kind=kind,
            rows=rows,
            reason=request.POST.get("reason", ""),
            error=error,
            seconds=platforms.PATTERN_SECONDS,
            back_url=reverse("admin:transfers_transfercase_change", args=[case.pk]),
        )
        return TemplateResponse(request, "admin/transfers/platformtemplateversion/learn.html", context)

    # --- edit as YAML (registry entries, new platforms) ---------------------------------------------------------
    def edit_view(self, request: HttpRequest) -> HttpResponse:
        require(request, MANAGE)
        source = request.GET.get("from") or request.POST.get("from", "")
        platform = (request.POST.get("platform") or request.GET.get("platform") or "").strip().lower()[:32]
        case_pk = (request.GET.get("case") or request.POST.get("case", ""))[:12]
        case, found = None, None
        if case_pk.isdigit():
            case = get_object_or_404(TransferCase, pk=int(case_pk))
            found = case.details.get("new_platform") if isinstance(case.details, dict) else None
            if not found:
                raise Http404("The case holds no first mail of a platform the service does not know.")
        text, based_on = "", None
        if source.isdigit():
            version = get_object_or_404(V, pk=int(source))
            platform, text, based_on = version.platform, data_dump(version.data), version.version
        elif found is not None:
            platform, text = found.get("platform", "")[:32], first_mail_entry(found)
        elif platform and data_in_force(platform) is not None:
            text = data_dump(data_in_force(platform))
        elif not platform:
            text = new_platform.skeleton()
        error = ""
        if request.method == "POST":
            text = request.POST.get("yaml", "")[:64_001]
            reason = request.POST.get("reason", "").strip()[:500]
            try:
                if not platform:
                    raise TemplateInvalid("Name the platform (its primary_site).")
                data = data_load(text, platform=platform) if text.strip() else None
                if data is None:
                    raise TemplateInvalid("The template is empty.")
                created = version_create(
                    platform=platform,
                    data=data,
                    actor=staff_actor(request),
                    reason=reason,
                    based_on=based_on,
                    learned_from=case,
                )
            except TemplateInvalid as exc:
                error = str(exc)
            else:
                self.log_change(request, created, f"New version: {reason}")
                note = (
                    " It changes the sender domains or accept-link hosts: a second staff member must approve it."
                    if created.registry_change
                    else ""
                )
                self.message_user(
                    request, f"Draft version {created.version} of {platform} saved.{note}", messages.SUCCESS
                )
                return HttpResponseRedirect(
                    reverse("admin:transfers_platformtemplateversion_change", args=[created.pk])
                )
        context = self._context(
            request,
            title=f"New version of {platform}"
            if platform and data_in_force(platform) is not None
            else "A new platform",
            platform=platform,
            source=source,
            case=case,
            found=found,
            text=text,
            reason=request.POST.get("reason", ""),
            error=error,
            back_url=reverse("admin:transfers_platformtemplateversion_changelist"),
        )
        return TemplateResponse(request, "admin/transfers/platformtemplateversion/edit.html", context)

    # --- test, export -----------------------------------------------------------------------------------------------


def first_mail_entry(found: dict) -> str:
    """The editor's text for the first mail of a platform the service does not know (``new_platform.facts``):
    the commented skeleton filled from the mail, or, when the order's platform has an entry, the version in
    force with the mail's sender domain and link hosts added."""
    in_force = data_in_force(found.get("platform", ""))
    if in_force is None:
        return new_platform.skeleton(found)
    merged = {**in_force}
    for key, extra in (
        ("sender_domains", [found.get("from_domain")]),
        ("accept_link_hosts", found.get("link_hosts")),
    ):
        merged[key] = list(dict.fromkeys([*(in_force.get(key) or []), *[v for v in extra or [] if v]]))
    return data_dump(merged)
