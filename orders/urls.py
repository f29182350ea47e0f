from django.urls import path

from . import api, extensions, testmode_api

urlpatterns = [
    path("orders", api.orders_view, name="orders"),
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
    # Test-mode endpoints the sub-apps add (``orders.extensions.testmode_routes_add``: simulate_transfer).
    *extensions.TESTMODE_ROUTES,
]
