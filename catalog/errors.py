"""The error codes catalog endpoints send (the catalogue lives in config.api.errors)."""

from config.api.errors import EventNotFound, Forbidden, SectionNotFound, ValidationFailed

__all__ = ["EventNotFound", "Forbidden", "SectionNotFound", "ValidationFailed"]
