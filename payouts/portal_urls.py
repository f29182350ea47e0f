"""The payouts pages of the partner portal. Mounted by ``config/urls.py`` under ``/portal/`` in the ``portal``
namespace, beside the portal pages of partners and orders (no ``app_name`` of its own)."""

from django.urls import path, re_path

from .backoffice import portal_home
from .portal import payment_methods, payouts, statements

urlpatterns = [
    path("", portal_home.dashboard, name="dashboard"),
    path("settings/payment-methods", payment_methods.payment_methods, name="payment-methods"),
    path("settings/payment-methods/payout/connect", payment_methods.payout_connect, name="payout-connect"),
    path("settings/payment-methods/payout/return", payment_methods.payout_return, name="payout-return"),
    path("settings/payment-methods/card/add", payment_methods.card_add, name="card-add"),
    path("settings/payment-methods/card/return", payment_methods.card_return, name="card-return"),
    path("payouts", payouts.payouts, name="payouts"),
    path("payouts.csv", payouts.payouts_csv, name="payouts-csv"),
    path("statements", statements.statement, name="statements"),
    re_path(r"^statements/(?P<month>[0-9]{4}-[0-9]{2})$", statements.statement, name="statement"),
    re_path(
        r"^statements/(?P<month>[0-9]{4}-[0-9]{2})\.csv$", statements.statement_csv, name="statement-csv"
    ),
]
