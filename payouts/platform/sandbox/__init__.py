"""The ``sandbox`` payment platform (``PAYMENT_PLATFORM=sandbox``, the default in development), one folder:
``backend.py``, ``SandboxPlatform``, the client of the payment sandbox. The sandbox itself (its records, test
numbers and pages under ``/sandbox/``) is the ``payouts.sandbox`` app, label ``sandbox``, which keeps its
tables and migrations; its pages are mounted as this platform's URLs.
"""

from __future__ import annotations

from ..base import PaymentPlatform
from .backend import SandboxPlatform

URLS = ("sandbox/", "payouts.sandbox.urls")


def backend() -> PaymentPlatform:
    return SandboxPlatform()
