"""Settings → Webhooks in the partner portal, mounted at ``/portal/settings/webhooks/``."""

from django.urls import path

from . import portal

app_name = "portal_webhooks"

urlpatterns = [
    path("", portal.endpoint_list, name="list"),
    path("add", portal.endpoint_add, name="add"),
    path("<str:endpoint_id>", portal.endpoint_detail, name="detail"),
    path("<str:endpoint_id>/secret", portal.endpoint_secret, name="secret"),
    path("<str:endpoint_id>/status", portal.endpoint_status, name="status"),
    path("<str:endpoint_id>/rotate", portal.endpoint_rotate, name="rotate"),
    path("<str:endpoint_id>/ping", portal.endpoint_ping, name="ping"),
    path("<str:endpoint_id>/resend", portal.endpoint_resend, name="resend"),
    path("<str:endpoint_id>/delete", portal.endpoint_delete, name="delete"),
]
