"""The payment platforms, by the name ``settings.PAYMENT_PLATFORM`` selects: each one folder (a package) under
``payouts/platform/``, named here and nowhere else (tests/house/test_platform_folders.py, part of ``make lint``).

A platform's package provides:
- ``backend()``: its ``PaymentPlatform``, built from the settings (``get_platform`` wraps it in ``LoggedPlatform``);
- ``URLS`` (optional): ``(prefix, urlconf)``, its inbound pages or events endpoint, mounted at ``/<prefix>`` by
  ``payouts/platform/urls.py`` (``urlconf`` is anything ``django.urls.include`` takes).
Adding a platform is its folder and one line here.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from django.core.exceptions import ImproperlyConfigured

PLATFORMS: dict[str, str] = {
    "sandbox": "payouts.platform.sandbox",
    "stripe": "payouts.platform.stripe",
}


def platform_known(name: str) -> str:
    """The path of the platform ``name``'s package; ``ImproperlyConfigured`` for a name not registered."""
    try:
        return PLATFORMS[name]
    except KeyError:
        known = " or ".join(repr(known) for known in PLATFORMS)
        raise ImproperlyConfigured(f"Unknown PAYMENT_PLATFORM {name!r}: use {known}.") from None


def platform_module(name: str) -> ModuleType:
    """The package of the platform ``name``; ``ImproperlyConfigured`` for a name not registered."""
    return import_module(platform_known(name))
