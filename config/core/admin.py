"""The shared mechanics' admin: the e-mails sent at most once, read-only. Staff find here the messages handed to
the mail server whose acceptance was never recorded (``unconfirmed``: probably sent, never sent again
automatically), to check with the recipient; each row links to the record it is about."""

from django.apps import apps
from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from . import mail_once
from .history_admin import ReadOnlyAdmin
from .models import MailOnce


@admin.register(MailOnce)
class MailOnceAdmin(ReadOnlyAdmin):
    # The claim's time stays on each row's page: the list shows what staff check with a recipient.
    list_display = ("purpose", "about", "recipient", "handed_over_at", "sent_at", "unconfirmed")
    list_filter = ("purpose", "unconfirmed")
    search_fields = ("=key", "recipient")
    ordering = ("-id",)

    @admin.display(description="About", ordering="key")
    def about(self, obj: MailOnce) -> str:
        """The record the e-mail is about, linked to its admin page (its bare key for a purpose not registered)."""
        label = mail_once.purpose_subject(obj.purpose)
        if label is None:
            return obj.key
        meta = apps.get_model(label)._meta
        try:
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.key])
        except NoReverseMatch:
            return f"{meta.verbose_name} {obj.key}"
        return format_html('<a href="{}">{} {}</a>', url, meta.verbose_name, obj.key)
