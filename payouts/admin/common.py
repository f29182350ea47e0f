"""What the payouts admin pages share: read-only pages, the order link, and the retry confirmation."""

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


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
    }
    return TemplateResponse(request, "admin/payouts/confirm_retry.html", context)
