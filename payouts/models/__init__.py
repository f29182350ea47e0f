from .methods import CreditCard, PayoutAccount
from .sandbox import (
    SandboxAccount,
    SandboxAuthorizationCode,
    SandboxCard,
    SandboxCardSetup,
    SandboxCharge,
    SandboxPayout,
)

__all__ = [
    "CreditCard",
    "PayoutAccount",
    "SandboxAccount",
    "SandboxAuthorizationCode",
    "SandboxCard",
    "SandboxCardSetup",
    "SandboxCharge",
    "SandboxPayout",
]
