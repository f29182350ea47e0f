from .methods import CreditCard, PayoutAccount
from .money import Charge, Payout
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
