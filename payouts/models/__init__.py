from .methods import CreditCard, PayoutAccount
from .money import Charge, ChargeStatusHistory, Payout, PayoutStatusHistory, RefundStatusHistory

__all__ = [
    "Charge",
    "ChargeStatusHistory",
    "Payout",
    "PayoutStatusHistory",
    "RefundStatusHistory",
    "CreditCard",
    "PayoutAccount",
]
