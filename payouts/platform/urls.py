"""The registered platforms' own URLs (``URLS`` of each platform's package), mounted at the root by
config/urls.py: ``/sandbox/`` (the payment sandbox's pages), ``/payments/stripe/`` (Stripe's events)."""

from __future__ import annotations

from typing import Any

from django.urls import include, path

from .registry import PLATFORMS, platform_module

urlpatterns: list[Any] = []
for _name in PLATFORMS:
    _urls = getattr(platform_module(_name), "URLS", None)
    if _urls is not None:
        _prefix, _urlconf = _urls
        urlpatterns.append(path(_prefix, include(_urlconf)))
