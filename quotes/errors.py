"""The error codes quote endpoints send (the catalogue lives in config.api.errors)."""

from config.api.errors import (
    EventExpired,
    EventNotFound,
    Forbidden,
    InsufficientQuantity,
    PayoutMethodNotConfigured,
    QuoteNotFound,
    RowNotFound,
    SectionNotFound,
    ValidationFailed,
)

__all__ = [
    "EventExpired",
    "EventNotFound",
    "Forbidden",
    "InsufficientQuantity",
    "PayoutMethodNotConfigured",
    "QuoteNotFound",
    "RowNotFound",
    "SectionNotFound",
    "ValidationFailed",
]
