"""The scale tests' fixtures: the staff's signed-in client of the orders' admin tests."""

from tests.orders.test_admin import staff_client  # noqa: F401  (fixture)
