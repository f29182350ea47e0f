"""No full card number or bank account number ever reaches the database or the logs (docs/partners/portal.md "Payment platform")."""

import logging
import re
from io import StringIO

import pytest
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.db import connection

from orders.transfers.decision.state import order_receive
from payouts.lifecycle.confirmation import order_confirm
from payouts.services.progression import payouts_progress
from tests.orders.factories import make_order
from tests.portal.fixtures import add_card, connect_payout_account, portal_login

CARD = "4242424242424242"
DECLINING_CARD = "4000000000000002"
ACCOUNT = "000987654321"
SECRETS = [CARD, DECLINING_CARD, ACCOUNT]


def _spaced(number: str) -> str:
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


def _assert_absent(text: str, where: str) -> None:
    squeezed = re.sub(r"[\s\-+]", "", text)
    for number in SECRETS:
        assert number not in squeezed, f"full number {number[:4]}… found in {where}"
        assert _spaced(number) not in text, f"full number {number[:4]}… found in {where}"


@pytest.mark.django_db
def test_no_full_card_or_account_number_in_database_or_logs(caplog):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django")  # Django sets its own logger to INFO
    connection.force_debug_cursor = True  # log every SQL statement with its parameters
    try:
        login = portal_login(name="Careful Co", email="carol@careful.example", payment_methods=False)
        client = login.client
        # A refused card form (bad expiry) first: the error page must not keep the number either.
        start = client.post("/portal/settings/payment-methods/card/add")
        client.post(
            start["Location"], {"holder_name": "C", "number": _spaced(CARD), "expiry": "13/99", "cvc": "321"}
        )
        connect_payout_account(client, account_number=ACCOUNT)
        add_card(client, number=_spaced(DECLINING_CARD))
        add_card(client, number=_spaced(CARD))
        # Money moves too: a charge and a payout for an order.
        order = make_order(login.partner)
        order_confirm(order_pk=order.pk)
        order.refresh_from_db()
        order_receive(order=order, source="staff", actor="staff:test", reason="received", accepted=True)
        payouts_progress()
    finally:
        connection.force_debug_cursor = False

    assert any(r.name == "django.db.backends" for r in caplog.records), "SQL was logged with parameters"
    _assert_absent(caplog.text, "the logs")
    for record in caplog.records:
        _assert_absent(repr(vars(record)), f"log record {record.name}")

    dump = StringIO()
    call_command("dumpdata", stdout=dump)
    _assert_absent(dump.getvalue(), "dumpdata")
    for session in Session.objects.all():
        _assert_absent(repr(session.get_decoded()), "a session")
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT t::text FROM "{table}" t')  # noqa: S608 - table names from introspection
            _assert_absent("\n".join(row[0] for row in cursor.fetchall()), f"table {table}")

    # …while the last 4 digits are kept, so people can tell methods apart.
    assert login.partner.payout_account.last4 == ACCOUNT[-4:]
    login.partner.credit_card.refresh_from_db()
    assert login.partner.credit_card.last4 == CARD[-4:]
