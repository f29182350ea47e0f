"""The partner portal (``/portal/``): server-rendered pages for a partner's own people.

Every page is scoped to the signed-in user's partner (``request.partner``): another partner's order or
payout is as unknown as a missing one. Times are shown in the partner's time zone (Settings · Preferences).
Payment methods are set up at the payment platform's own pages; the portal only keeps what the platform
hands back (ids, brand or bank name, last 4). Every successful POST answers with a redirect to a GET.
"""

from .auth import (
    login,
    logout,
    password_reset,
    password_reset_complete,
    password_reset_confirm,
    password_reset_done,
    welcome,
)
from .mode import mode_switch
from .orders import order_detail, orders, orders_csv
from .pages import api_credentials, dashboard, preferences
from .payment_methods import card_add, card_return, payment_methods, payout_connect, payout_return
from .payouts import payouts, payouts_csv
from .statements import statement, statement_csv

__all__ = [
    "api_credentials",
    "card_add",
    "card_return",
    "dashboard",
    "login",
    "logout",
    "mode_switch",
    "order_detail",
    "orders",
    "orders_csv",
    "password_reset",
    "password_reset_complete",
    "password_reset_confirm",
    "password_reset_done",
    "payment_methods",
    "payout_connect",
    "payout_return",
    "payouts",
    "payouts_csv",
    "preferences",
    "statement",
    "statement_csv",
    "welcome",
]
