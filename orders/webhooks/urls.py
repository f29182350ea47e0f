from django.urls import path

from . import api

urlpatterns = [
    path("webhook_endpoints", api.EndpointListCreateView.as_view(), name="webhook-endpoints"),
    path("webhook_endpoints/<str:endpoint_id>", api.EndpointDetailView.as_view(), name="webhook-endpoint"),
    path(
        "webhook_endpoints/<str:endpoint_id>/rotate_secret",
        api.RotateSecretView.as_view(),
        name="webhook-endpoint-rotate-secret",
    ),
    path("webhook_endpoints/<str:endpoint_id>/ping", api.PingView.as_view(), name="webhook-endpoint-ping"),
    path(
        "webhook_endpoints/<str:endpoint_id>/deliveries",
        api.DeliveryListView.as_view(),
        name="webhook-endpoint-deliveries",
    ),
    path(
        "webhook_endpoints/<str:endpoint_id>/resend", api.ResendView.as_view(), name="webhook-endpoint-resend"
    ),
]
