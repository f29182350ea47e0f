"""The process's ``StripeClient``: built once per configuration (``stripe_client``), with the API version of
the settings sent on every call, the library's own retries of network faults, 409s and 5xx
(``STRIPE_MAX_NETWORK_RETRIES``) and the service's timeout; and Stripe's typed errors as the platform
interface's (``stripe_errors``)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import stripe
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ...errors import PlatformError, PlatformUnavailable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StripeConfig:
    """Everything a ``StripeClient`` is built from; one client per distinct configuration and process."""

    secret_key: str = field(repr=False)  # never in a log line or an error report
    connect_client_id: str
    api_version: str
    api_base: str = stripe.DEFAULT_API_BASE
    connect_base: str = stripe.DEFAULT_CONNECT_API_BASE
    max_network_retries: int = 2
    timeout: float = 10.0

    @classmethod
    def from_settings(cls) -> StripeConfig:
        if not settings.STRIPE_SECRET_KEY or not settings.STRIPE_CONNECT_CLIENT_ID:
            raise ImproperlyConfigured(
                "PAYMENT_PLATFORM=stripe needs STRIPE_SECRET_KEY and STRIPE_CONNECT_CLIENT_ID."
            )
        return cls(
            secret_key=str(settings.STRIPE_SECRET_KEY),
            connect_client_id=str(settings.STRIPE_CONNECT_CLIENT_ID),
            api_version=str(settings.STRIPE_API_VERSION),
            api_base=str(settings.STRIPE_API_BASE),
            connect_base=str(settings.STRIPE_CONNECT_BASE),
            max_network_retries=int(settings.STRIPE_MAX_NETWORK_RETRIES),
            timeout=float(settings.PAYMENT_PLATFORM_TIMEOUT_SECONDS),
        )


def default_http_client(timeout: float) -> stripe.HTTPClient:
    """The library's own HTTP client, with the service's timeout instead of the library's 80 seconds."""
    return stripe.RequestsClient(timeout=timeout)


# The factory of the HTTP client new ``StripeClient`` s get: tests put a recording client here.
http_client_factory: Callable[[float], stripe.HTTPClient] = default_http_client


@functools.cache
def stripe_client(config: StripeConfig) -> stripe.StripeClient:
    """The process's ``StripeClient`` for ``config`` (built once: it keeps its HTTP connections)."""
    for base in (config.api_base, config.connect_base):
        if urlsplit(base).scheme not in ("https", "http"):
            raise ImproperlyConfigured(f"Stripe endpoint {base!r} must be an http(s) URL.")
    return stripe.StripeClient(
        config.secret_key,
        client_id=config.connect_client_id,
        stripe_version=config.api_version,
        base_addresses={"api": config.api_base.rstrip("/"), "connect": config.connect_base.rstrip("/")},
        max_network_retries=config.max_network_retries,
        http_client=http_client_factory(config.timeout),
    )


def _message(exc: stripe.StripeError) -> str:
    return str(exc.user_message or "") or f"Stripe refused the request (HTTP {exc.http_status or '?'})."


@contextmanager
def stripe_errors() -> Iterator[None]:
    """Stripe's typed errors as the interface's: passing trouble → ``PlatformUnavailable``, a refusal →
    ``PlatformError`` (the library has already retried what it retries)."""
    try:
        yield
    except (stripe.APIConnectionError, stripe.RateLimitError, stripe.APIError) as exc:
        # No connection or a timeout, rate limited, 409 (the same key still being processed) or 5xx.
        raise PlatformUnavailable(
            "Stripe is not answering right now. Please try again in a few minutes."
        ) from exc
    except stripe.AuthenticationError as exc:
        # Our key: a configuration to fix. Retried until then, never a partner's failed payment.
        logger.error("Stripe refused the service's API key: %s", _message(exc))
        raise PlatformUnavailable("The payment platform refused the service's credentials.") from exc
    except stripe.StripeError as exc:
        raise PlatformError(_message(exc)) from exc
