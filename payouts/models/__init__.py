from .methods import CreditCard, PayoutAccount
from .money import (
    Charge,
    ChargeStatusHistory,
    Payout,
    PayoutStatusHistory,
    PayoutTotal,
    RefundStatusHistory,
    SweepMark,
)
from .platform_events import Dispute, DisputeStatusHistory, PlatformEvent

__all__ = [
    "Charge",
    "ChargeStatusHistory",
    "Payout",
    "PayoutStatusHistory",
    "PayoutTotal",
    "RefundStatusHistory",
    "SweepMark",
    "CreditCard",
    "Dispute",
    "DisputeStatusHistory",
    "PlatformEvent",
    "PayoutAccount",
]
