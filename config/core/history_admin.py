"""Admin pieces the apps share: read-only pages, and the read-only table of a status history
(``config.core.statemachine.StatusHistory`` rows)."""

from collections.abc import Iterable

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from .statemachine import StatusHistory


class ReadOnly:
    """Mixed into a model admin or an inline: staff read, never add, change or delete by hand (actions may
    still act through services)."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnly, admin.ModelAdmin):
    """A read-only admin page."""


class StatusHistoryInline(ReadOnly, admin.TabularInline):
    """Every move of the row's status, oldest first; nobody adds, edits or deletes one by hand."""

    fields = ("at", "from_status", "to_status", "actor", "reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("at", "id")


def status_history_table(rows: Iterable[StatusHistory]) -> str:
    """The same history as a table in a read-only field, for change forms that staff submit (an inline
    would add a formset to every submitted form)."""
    rows = list(rows)
    if not rows:
        return "—"
    lines = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (h.at.strftime("%Y-%m-%d %H:%M:%S UTC"), h.from_status or "—", h.to_status, h.actor, h.reason)
            for h in rows
        ),
    )
    return format_html(
        "<table><thead><tr><th>At</th><th>From</th><th>To</th><th>By</th><th>Reason</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        lines,
    )
