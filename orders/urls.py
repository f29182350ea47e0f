from django.urls import path

from orders.transfers.testing import api as transfers_testmode_api

from . import api, testmode_api

urlpatterns = [
    path("orders", api.OrderListCreateView.as_view(), name="orders"),
    path("orders/<str:order_id>", api.OrderDetailView.as_view(), name="order-detail"),
    path("orders/<str:order_id>/cancel", api.OrderCancelView.as_view(), name="order-cancel"),
    path("notifications", api.NotificationListView.as_view(), name="notifications"),
    path(
        "notifications/<str:notification_id>",
        api.NotificationDetailView.as_view(),
        name="notification-detail",
    ),
    path(
        "test/orders/<str:order_id>/advance",
        testmode_api.OrderAdvanceView.as_view(),
        name="test-order-advance",
    ),
    path(
        "test/orders/<str:order_id>/simulate_transfer",
        transfers_testmode_api.SimulateTransferView.as_view(),
        name="test-order-simulate-transfer",
    ),
]
