"""Domain errors of the payment platform and of payment methods.

These never reach the partner API directly: the portal shows their message, Celery tasks retry on
``PlatformUnavailable``, the admin shows the reason.
"""


class PaymentError(Exception):
    """Base class: ``str(error)`` is a message a person can act on."""

    message = "The payment platform could not complete the request."

    def __init__(self, message: str | None = None) -> None:
        self.message = message or type(self).message
        super().__init__(self.message)


class PlatformUnavailable(PaymentError):
    """Transient: the platform timed out, was unreachable or answered 5xx/429. Retry later."""

    message = "The payment platform is not answering right now. Please try again in a few minutes."


class PlatformError(PaymentError):
    """Permanent: the platform refused the request (bad configuration, unknown object, expired code)."""


class AuthorizationFailed(PlatformError):
    """The payout-account authorization or card setup could not be completed."""

    message = "The payment platform did not confirm the authorization. Please start again."


class ReplaceNeedsConfirmation(PaymentError):
    """docs/partners/portal.md "Portal, payments and payouts": replacing a payment method while orders are active needs an explicit confirmation."""

    message = (
        "Updating or replacing a payment method while orders are active may cause billing problems. "
        "Confirm that you want to replace it."
    )
