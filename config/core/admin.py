"""The shared mechanics' admin: the e-mails sent at most once, read-only. Staff find here the messages handed to
the mail server whose acceptance was never recorded (``unconfirmed``: probably sent, never sent again
automatically), to check with the recipient."""

from django.contrib import admin

from .history_admin import ReadOnlyAdmin
from .models import MailOnce


@admin.register(MailOnce)
class MailOnceAdmin(ReadOnlyAdmin):
    list_display = ("purpose", "key", "recipient", "claimed_at", "handed_over_at", "sent_at", "unconfirmed")
    list_filter = ("purpose", "unconfirmed")
    search_fields = ("=key", "recipient")
    ordering = ("-id",)
