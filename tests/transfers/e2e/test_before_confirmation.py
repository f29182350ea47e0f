"""A transfer e-mail that arrives before the order's confirmation ran (the partner transferred at once, the
worker is behind): the evidence waits, and once the confirmation moved the order to ``awaiting_transfer``
it is decided at once, with nothing authenticated twice."""

import pytest

from orders.models import Order
from orders.transfers.models import InboundMessage
from orders.transfers.tasks import messages_process_due
from tests.catalog.factories import RowFactory
from tests.testmode.conftest import api_order

from .conftest import deliver, genuine

S, TS = Order.Status, Order.TransferState
pytestmark = pytest.mark.django_db


def test_mail_before_the_confirmation_is_received_once_the_order_is_confirmed(shop):
    row = RowFactory(name="A", section__name="Lower 101", available_quantity=10)
    with shop.capture() as confirmation:  # the confirmation has not run yet
        data = api_order(shop.test, row, quantity=2)
    order = Order.objects.select_related("event__venue").get(order_id=data["order_id"])
    assert order.status == S.ACCEPTED and confirmation

    message = deliver(genuine(order), order, shop.capture)
    assert message.authentic is True and message.stage == InboundMessage.Stage.DEFERRED
    assert message.verdicts["decision"]["action"] == "waiting_for_confirmation"
    order.refresh_from_db()
    assert order.status == S.ACCEPTED and order.transfer.state == TS.NONE
    auth = message.verdicts["auth"]

    # The confirmation's order.status_changed makes the waiting message due at once: no retry is needed.
    with shop.capture(execute=True):
        for callback in confirmation:
            callback()
    message.refresh_from_db()
    order.refresh_from_db()
    assert message.outcome == InboundMessage.Outcome.MATCHED and message.verdicts["auth"] == auth
    assert (order.status, order.transfer.state) == (S.TICKET_RECEIVED, TS.DETECTED)
    with shop.capture(execute=True):
        assert messages_process_due() == 0
    assert order.status_history.filter(to_status=S.TICKET_RECEIVED).count() == 1
