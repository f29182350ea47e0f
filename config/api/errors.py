"""The one catalogue of error codes the partner API sends, each with its HTTP status.

The table of docs/partners/errors.md "Error codes" first, then its documented additions. Views never build error
responses: they raise one of these and ``config.api.exceptions.exception_handler`` renders the envelope.
"""

from typing import Any, ClassVar


class ApiError(Exception):
    code: ClassVar[str] = "INTERNAL_ERROR"
    status: ClassVar[int] = 500
    message: ClassVar[str] = (
        "Unexpected server error. Retry, and contact support with the request_id if it persists."
    )

    def __init__(
        self,
        message: str | None = None,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or type(self).message
        self.details = details
        self.headers = headers or {}
        super().__init__(self.message)


# --- the table of docs/partners/errors.md "Error codes" ----------------------------------------------------------------------
class InvalidCredentials(ApiError):
    code, status, message = "INVALID_CREDENTIALS", 401, "client_id or client_secret is wrong."


class Unauthorized(ApiError):
    code, status, message = "UNAUTHORIZED", 401, "Missing or invalid Bearer token."


class TokenExpired(ApiError):
    code, status, message = "TOKEN_EXPIRED", 401, "The access token has expired; request a new token."


class UnsupportedGrantType(ApiError):
    code, status, message = "UNSUPPORTED_GRANT_TYPE", 400, "grant_type must be client_credentials."


class AccountSuspended(ApiError):
    code, status, message = "ACCOUNT_SUSPENDED", 403, "The partner account is inactive or suspended."


class Forbidden(ApiError):
    code, status, message = (
        "FORBIDDEN",
        403,
        "The resource belongs to another partner or needs another scope.",
    )


class PayoutMethodNotConfigured(ApiError):
    code, status = "PAYOUT_METHOD_NOT_CONFIGURED", 403
    message = (
        "The account has no configured payment method on the payment platform. Set up a payout method and a "
        "credit card in the partner portal under Settings, then Payment Methods."
    )


class ValidationFailed(ApiError):
    code, status, message = "VALIDATION_ERROR", 400, "The request failed validation."

    def __init__(self, message: str | None = None, *, field: str, issue: str, **kwargs: Any) -> None:
        details = {"field": field, "issue": issue}
        details.update(kwargs.pop("details", None) or {})
        super().__init__(message or f"{field}: {issue}", details=details, **kwargs)


class EventNotFound(ApiError):
    code, status, message = "EVENT_NOT_FOUND", 404, "No event with this id in the catalog."


class EventExpired(ApiError):
    code, status, message = "EVENT_EXPIRED", 422, "The event has started, passed or been canceled."


class SectionNotFound(ApiError):
    code, status, message = "SECTION_NOT_FOUND", 404, "No section with this name for the event."


class InsufficientQuantity(ApiError):
    code, status, message = (
        "INSUFFICIENT_QUANTITY",
        422,
        "The row does not have the requested quantity available.",
    )


class QuoteNotFound(ApiError):
    code, status, message = "QUOTE_NOT_FOUND", 404, "No quote with this quote_id."


class QuoteExpired(ApiError):
    code, status, message = "QUOTE_EXPIRED", 422, "The quote has expired; create a new quote."


class QuoteAlreadyConsumed(ApiError):
    code, status, message = "QUOTE_ALREADY_CONSUMED", 422, "The quote was already used for an order."


class InvalidDeliveryDeadline(ApiError):
    code, status = "INVALID_DELIVERY_DEADLINE", 422
    message = "in_hand_date must be at least 2 days before the event date."


class RateLimitExceeded(ApiError):
    code, status, message = (
        "RATE_LIMIT_EXCEEDED",
        429,
        "Too many requests; retry after the Retry-After seconds.",
    )


class InternalError(ApiError):
    pass


class InHandDateRequired(ApiError):
    code, status, message = (
        "IN_HAND_DATE_REQUIRED",
        400,
        "in_hand_date is required when is_ready_to_deliver is false.",
    )


class FileRequired(ApiError):
    code, status, message = "FILE_REQUIRED", 400, "A PDF file is required when delivery_type is pdf."


# --- documented additions ----------------------------------------------------------------------------
class RowNotFound(ApiError):
    code, status, message = "ROW_NOT_FOUND", 404, "No row with this name in the section."


class OrderNotFound(ApiError):
    code, status, message = "ORDER_NOT_FOUND", 404, "No order with this order_id for this partner."


class OrderNotCancelable(ApiError):
    code, status, message = "ORDER_NOT_CANCELABLE", 409, "The order can no longer be canceled."


class WebhookEndpointNotFound(ApiError):
    code, status = "WEBHOOK_ENDPOINT_NOT_FOUND", 404
    message = "No webhook endpoint with this endpoint_id for this partner (in this mode)."


class NotificationNotFound(ApiError):
    code, status = "NOTIFICATION_NOT_FOUND", 404
    message = "No notification with this notification_id for this partner (in this mode)."


class NotFound(ApiError):
    code, status, message = "NOT_FOUND", 404, "No such endpoint."


class MethodNotAllowed(ApiError):
    code, status, message = "METHOD_NOT_ALLOWED", 405, "This method is not allowed on this endpoint."


class PayloadTooLarge(ApiError):
    code, status, message = "PAYLOAD_TOO_LARGE", 413, "The request body is too large."


class RequestHeadersTooLarge(ApiError):
    # Answered before the application runs (config/deploy/early_errors.py, the nginx template): too many header
    # fields, or one too large.
    code, status, message = (
        "REQUEST_HEADERS_TOO_LARGE",
        431,
        "The request has too many headers, or one too large.",
    )


class UnsupportedTransferCoding(ApiError):
    # Answered before the application runs, like the one above: a Transfer-Encoding other than chunked.
    code, status, message = (
        "UNSUPPORTED_TRANSFER_CODING",
        501,
        "Only Transfer-Encoding: chunked is supported.",
    )


class ServiceUnavailable(ApiError):
    code, status, message = "SERVICE_UNAVAILABLE", 503, "A dependency of the service is not answering."


class IdempotencyKeyInUse(ApiError):
    code, status = "IDEMPOTENCY_KEY_IN_USE", 409
    message = "A request with this Idempotency-Key is still running; retry after the Retry-After seconds."

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        # docs/partners/idempotency.md "Retries and Idempotency-Key": the first request is usually done within a second.
        kwargs.setdefault("headers", {"Retry-After": "1"})
        super().__init__(message, **kwargs)


class IdempotencyKeyMismatch(ApiError):
    code, status = "IDEMPOTENCY_KEY_MISMATCH", 422
    message = "This Idempotency-Key was used with another request (method, path or body); use a new key."


class TestModeOnly(ApiError):
    code, status = "TEST_MODE_ONLY", 403
    message = "This endpoint works with a test-mode token only (credentials cli_test_… / sec_test_…)."


class IllegalTransitionError(ApiError):
    code, status = "ILLEGAL_TRANSITION", 409
    message = "The order cannot move to this status from its current one."


def all_error_classes() -> list[type[ApiError]]:
    """Every concrete error, once per code (used by the schema and by tests)."""
    seen: dict[str, type[ApiError]] = {}
    stack = list(ApiError.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        seen.setdefault(cls.code, cls)
    return sorted(seen.values(), key=lambda c: (c.status, c.code))
