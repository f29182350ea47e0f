"""The orders pages of the partner portal. Mounted by ``config/urls.py`` under ``/portal/`` in the ``portal``
namespace, beside the portal pages of the other apps (no ``app_name`` of its own)."""

from django.urls import path

from . import portal

urlpatterns = [
    path("orders", portal.orders, name="orders"),
    path("orders.csv", portal.orders_csv, name="orders-csv"),
    path("orders/<str:order_id>", portal.order_detail, name="order-detail"),
    path("notifications", portal.notifications, name="notifications"),
]
