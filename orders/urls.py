from django.urls import path

from . import api

urlpatterns = [
    path("orders", api.OrderListCreateView.as_view(), name="orders"),
    path("orders/<str:order_id>", api.OrderDetailView.as_view(), name="order-detail"),
    path("orders/<str:order_id>/cancel", api.OrderCancelView.as_view(), name="order-cancel"),
    path("notifications", api.NotificationListView.as_view(), name="notifications"),
]
