from django.urls import path, re_path

from . import portal

app_name = "portal"

urlpatterns = [
    path("", portal.dashboard, name="dashboard"),
    path("login", portal.login, name="login"),
    path("logout", portal.logout, name="logout"),
    path("password-reset", portal.password_reset, name="password-reset"),
    path("password-reset/sent", portal.password_reset_done, name="password-reset-done"),
    path("reset/<uidb64>/<token>", portal.password_reset_confirm, name="password-reset-confirm"),
    path("reset/done", portal.password_reset_complete, name="password-reset-complete"),
    path("welcome/<uidb64>/<token>", portal.welcome, name="welcome"),
    path("settings/payment-methods", portal.payment_methods, name="payment-methods"),
    path("settings/payment-methods/payout/connect", portal.payout_connect, name="payout-connect"),
    path("settings/payment-methods/payout/return", portal.payout_return, name="payout-return"),
    path("settings/payment-methods/card/add", portal.card_add, name="card-add"),
    path("settings/payment-methods/card/return", portal.card_return, name="card-return"),
    path("settings/api-credentials", portal.api_credentials, name="api-credentials"),
    path("mode", portal.mode_switch, name="mode"),
    path("settings/preferences", portal.preferences, name="preferences"),
    path("orders", portal.orders, name="orders"),
    path("orders.csv", portal.orders_csv, name="orders-csv"),
    path("orders/<str:order_id>", portal.order_detail, name="order-detail"),
    path("payouts", portal.payouts, name="payouts"),
    path("payouts.csv", portal.payouts_csv, name="payouts-csv"),
    path("statements", portal.statement, name="statements"),
    re_path(r"^statements/(?P<month>[0-9]{4}-[0-9]{2})$", portal.statement, name="statement"),
    re_path(r"^statements/(?P<month>[0-9]{4}-[0-9]{2})\.csv$", portal.statement_csv, name="statement-csv"),
]
