"""Errors the webhooks API raises (codes from the one catalogue, ``config.api.errors``)."""

from config.api.errors import (  # noqa: F401  (re-exported for the app)
    NotificationNotFound,
    ValidationFailed,
    WebhookEndpointNotFound,
)
