from .methods import CreditCard, PayoutAccount
from .money import Charge, Payout, PayoutStatusHistory, RefundStatusHistory
from .sandbox import (
    SandboxAccount,
    SandboxAuthorizationCode,
    SandboxCard,
    SandboxCardSetup,
    SandboxCharge,
    SandboxPayout,
    SandboxRefund,
)

__all__ = [
    "Charge",
    "Payout",
    "PayoutStatusHistory",
    "RefundStatusHistory",
    "CreditCard",
    "PayoutAccount",
    "SandboxAccount",
    "SandboxAuthorizationCode",
    "SandboxCard",
    "SandboxCardSetup",
    "SandboxCharge",
    "SandboxPayout",
    "SandboxRefund",
]
