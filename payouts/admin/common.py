"""What the payouts admin pages share: the order link and the retries of a failed record, behind the staff
confirmation (``config.core.confirmation``)."""

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from config.core.confirmation import confirm

COLUMNS = ("Record", "Order", "Partner", "Amount", "Status")


def order_link(order) -> str:
    return format_html(
        '<a href="{}">{}</a>', reverse("admin:orders_order_change", args=[order.pk]), order.order_id
    )


def describe(record) -> tuple:
    """A charge (its refund) or a payout, as the retry's confirmation lists it."""
    status = (
        f"refund {record.get_refund_status_display()}"
        if getattr(record, "refund_status", "")
        else record.get_status_display()
    )
    return (
        f"{record._meta.verbose_name.capitalize()} #{record.pk}",
        record.order.order_id,
        record.partner.name,
        f"{record.amount} {getattr(record, 'currency', '')}".strip(),
        status,
    )


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
    to ``back_url``, so that a reload retries nothing twice."""

    def act(data: dict) -> None:
        if retry():
            for obj in (record, *also_log):
                model_admin.log_change(request, obj, f"{log_message}: {data['reason']}")
            messages.success(request, done)
        else:
            messages.warning(request, refused)

    return confirm(
        request,
        model_admin,
        permissions=(permission,),
        objects=[record],
        describe=describe,
        columns=COLUMNS,
        title=f"Retry {what}?",
        effects=(effect,),
        submit="Yes, retry",
        reason_label="Reason (kept in the record's history)",
        testid="confirm-retry",
        act=act,
        action_url=action_url,
        back_url=back_url,
        done_url=back_url,
        record_label=f"{record._meta.verbose_name.capitalize()} #{record.pk}",
        arrives_by_post=True,
    )


def retry_many(
    request: HttpRequest,
    model_admin: admin.ModelAdmin,
    queryset: QuerySet,
    *,
    failed: QuerySet,
    retry: Callable[[Any], bool],
    permission: str,
    what: str,
    effect: str,
    action_url: str,
    log_message: str,
    done: str,
    skipped: str,
) -> HttpResponse | None:
    """A list's retry action: the confirmation until it comes back with a reason, then ``retry(record)`` for
    each of the selected ``failed`` records, the reason in each one's history, and counts of what was done
    (``done``/``skipped`` are formatted with the count ``n``)."""

    def act(data: dict) -> None:
        retried = 0
        for record in failed:
            if retry(record):
                model_admin.log_change(request, record, f"{log_message}: {data['reason']}")
                retried += 1
        messages.success(request, done.format(n=retried))
        if left := queryset.count() - retried:
            messages.warning(request, skipped.format(n=left))

    return confirm(
        request,
        model_admin,
        permissions=(permission,),
        objects=list(queryset.select_related("order", "partner").order_by("pk")),
        describe=describe,
        columns=COLUMNS,
        title=f"Retry {what}?",
        effects=(effect,),
        submit="Yes, retry",
        reason_label="Reason (kept in each record's history)",
        testid="confirm-retry",
        act=act,
        action_url=action_url,
    )
