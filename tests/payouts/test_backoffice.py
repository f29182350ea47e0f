"""The back office registers the order and partner admin pages once, with their money, and owns the commands
that span apps."""

import pathlib

import pytest
from django.conf import settings
from django.contrib import admin
from django.core.management import get_commands

from orders.models import Order
from partners.models import Partner
from payouts.models import Charge, CreditCard, Payout, PayoutAccount


def test_the_order_page_is_the_back_office_one_with_its_charge_and_payout():
    model_admin = admin.site.get_model_admin(Order)
    assert type(model_admin).__module__ == "payouts.backoffice.admin.orders"
    assert {Charge, Payout} <= {inline.model for inline in model_admin.inlines}


def test_the_partner_page_is_the_back_office_one_with_its_payment_methods():
    model_admin = admin.site.get_model_admin(Partner)
    assert type(model_admin).__module__ == "payouts.backoffice.admin.partners"
    assert {PayoutAccount, CreditCard} <= {inline.model for inline in model_admin.inlines}


def test_no_admin_is_unregistered_to_be_registered_again():
    root = pathlib.Path(settings.BASE_DIR)
    sources = [
        path
        for app in ("config", "partners", "catalog", "quotes", "orders", "payouts")
        for path in (root / app).rglob("*.py")
    ]
    assert sources
    assert not [str(path) for path in sources if "site.unregister(" in path.read_text()]


@pytest.mark.parametrize("command", ["create_partner", "demo_setup"])
def test_the_commands_that_span_apps_belong_to_the_back_office(command):
    assert get_commands()[command] == "payouts.backoffice"
