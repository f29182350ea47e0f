"""Errors the orders app raises: the API codes it uses, and the life cycle's refusal of an illegal move."""

from config.api.errors import (  # noqa: F401  (re-exported for the app)
    EventExpired,
    FileRequired,
    Forbidden,
    IllegalTransitionError,
    InHandDateRequired,
    InsufficientQuantity,
    InvalidDeliveryDeadline,
    NotificationNotFound,
    OrderNotCancelable,
    OrderNotFound,
    PayoutMethodNotConfigured,
    QuoteAlreadyConsumed,
    QuoteExpired,
    QuoteNotFound,
    TestModeOnly,
    ValidationFailed,
)
from config.core.statemachine import IllegalStateMove


class IllegalTransition(IllegalStateMove):
    """``order_transition`` refused a move the life cycle does not allow (docs/partners/orders.md "Life cycle").

    Not an API error by itself: each caller says what it means for them (the cancel endpoint answers
    409 ORDER_NOT_CANCELABLE, the admin shows a message, a task logs and moves on).
    """

    def __init__(self, *, order_id: str, from_status: str, to_status: str) -> None:
        self.order_id = order_id
        self.from_status = from_status
        self.to_status = to_status
        super().__init__(machine="order", label=order_id, from_state=from_status, to_state=to_status)
