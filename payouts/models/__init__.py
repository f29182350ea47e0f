from .methods import CreditCard, PayoutAccount
from .money import Charge, Payout, PayoutStatusHistory, RefundStatusHistory

__all__ = [
    "Charge",
    "Payout",
    "PayoutStatusHistory",
    "RefundStatusHistory",
    "CreditCard",
    "PayoutAccount",
]
