"""The orders tests' quotable row and quote of ``partner``, for the orders made through the API here."""

from tests.orders.conftest import quote, row  # noqa: F401  (fixtures)
