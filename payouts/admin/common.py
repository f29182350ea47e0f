"""What the payouts admin pages share: the order link and the retry confirmation."""

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from config.core.admin_permissions import require


def order_link(order) -> str:
    return format_html(
        '<a href="{}">{}</a>', reverse("admin:orders_order_change", args=[order.pk]), order.order_id
    )


def retry_reason(request: HttpRequest) -> str:
    return request.POST.get("reason", "").strip()[:255]


def confirm_retry(
    request: HttpRequest,
    model_admin: admin.ModelAdmin,
    objects: list,
    *,
    what: str,
    effect: str,
    action_url: str,
    back_url: str = "",
) -> TemplateResponse:
    """The page between a retry and its effect: what will be retried, what happens, and the reason for the log.

    Posted from the list's action menu it carries the action and the selection; posted from a record's button
    it goes back to that button's own URL.
    """
    confirmed = request.POST.get("confirmed") == "yes"
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Retry {what}?",
        "what": what,
        "effect": effect,
        "objects": objects,
        "action_url": action_url,
        "action_name": request.POST.get("action", ""),
        "select_across": request.POST.get("select_across", "0"),
        "reason": request.POST.get("reason", ""),
        "error": "Give a reason for the retry." if confirmed else "",
        "opts": model_admin.model._meta,
        "changelist_url": reverse(
            f"admin:{model_admin.opts.app_label}_{model_admin.opts.model_name}_changelist"
        ),
        "back_url": back_url,
    }
    return TemplateResponse(request, "admin/payouts/confirm_retry.html", context)


def retry_one(
    request: HttpRequest,
    model_admin: admin.ModelAdmin,
    record,
    *,
    retry: Callable[[], bool],
    permission: str,
    what: str,
    effect: str,
    action_url: str,
    back_url: str,
    log_message: str,
    done: str,
    refused: str,
    also_log: tuple = (),
) -> HttpResponse:
    """A record's retry button (on its own page or its order's): the confirmation until it comes back with a
    reason, then ``retry()``, the reason in the history of the record (and of ``also_log``), and a redirect
    to ``back_url``, so that a reload retries nothing twice. Staff without ``permission`` get 403, on the
    confirming POST too."""
    require(request, permission)
    if request.method != "POST":
        messages.error(request, "A retry starts from its button.")
        return HttpResponseRedirect(back_url)
    reason = retry_reason(request)
    if request.POST.get("confirmed") != "yes" or not reason:
        return confirm_retry(
            request,
            model_admin,
            [record],
            what=what,
            effect=effect,
            action_url=action_url,
            back_url=back_url,
        )
    if retry():
        for obj in (record, *also_log):
            model_admin.log_change(request, obj, f"{log_message}: {reason}")
        messages.success(request, done)
    else:
        messages.warning(request, refused)
    return HttpResponseRedirect(back_url)


def retry_many(
    request: HttpRequest,
    model_admin: admin.ModelAdmin,
    queryset: QuerySet,
    *,
    failed: QuerySet,
    retry: Callable[[Any], bool],
    what: str,
    effect: str,
    action_url: str,
    log_message: str,
    done: str,
    skipped: str,
) -> TemplateResponse | None:
    """A list's retry action: the confirmation until it comes back with a reason, then ``retry(record)`` for
    each of the selected ``failed`` records, the reason in each one's history, and counts of what was done
    (``done``/``skipped`` are formatted with the count ``n``)."""
    reason = retry_reason(request)
    if request.POST.get("confirmed") != "yes" or not reason:
        return confirm_retry(
            request,
            model_admin,
            list(queryset.select_related("order", "partner").order_by("pk")),
            what=what,
            effect=effect,
            action_url=action_url,
        )
    retried = 0
    for record in failed:
        if retry(record):
            model_admin.log_change(request, record, f"{log_message}: {reason}")
            retried += 1
    messages.success(request, done.format(n=retried))
    if left := queryset.count() - retried:
        messages.warning(request, skipped.format(n=left))
    return None
