"""Two web processes of the production shape (gunicorn, Redis shared, each holding the rows its quotes chose
from): an order, a cancel or a staff edit made through one is in the very next quote through the other."""

from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Row
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import make_partner
from tests.faults.live import bearer_auth, http, production_env

pytestmark = pytest.mark.django_db(transaction=True)

ORDER_FORM = {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}


def test_a_change_through_one_process_is_in_the_next_quote_through_the_other(processes, settings):
    if not settings.REDIS_URL:
        pytest.fail("this test needs REDIS_URL (make test sets it)")
    event = EventFactory(name="Two Process Quotes", starts_at=timezone.now() + timedelta(days=30))
    section = SectionFactory(event=event, name="Lower 101")
    RowFactory(section=section, name="A", available_quantity=10, offer_price="100.00")
    RowFactory(section=section, name="B", available_quantity=4, offer_price="90.00")
    creds = make_partner(name="Split Quotes", email="ops@split-quotes.example")
    # Each process holds what it read for 30 s: only the versions can make it read again.
    env = production_env(CATALOG_CACHE_SECONDS="60", CATALOG_LOCAL_CACHE_SECONDS="30")
    one, other = processes.web(env, name="web-1"), processes.web(env, name="web-2")
    auth = bearer_auth(one, creds)

    def quote(url, quantity, row="A"):
        body = {
            "event_id": event.event_id,
            "section_name": "Lower 101",
            "row_name": row,
            "quantity": quantity,
        }
        return http("POST", url + "/v1/quotes", json_body=body, headers=auth)

    for url in (one, other):  # both processes hold the section's rows
        assert quote(url, 8).status == 201
    used = quote(one, 3)
    created = http("POST", one + "/v1/orders", form={"quote_id": used.body["data"]["quote_id"], **ORDER_FORM}, headers=auth)  # fmt: skip
    assert created.status == 201, created.body

    refused = quote(other, 8)
    assert refused.status == 422, refused.body
    assert refused.body["error"]["code"] == "INSUFFICIENT_QUANTITY"
    assert refused.body["error"]["details"] == {"requested": 8, "available": 7}
    assert quote(other, 7).status == 201

    canceled = http("POST", f"{other}/v1/orders/{created.body['data']['order_id']}/cancel", headers=auth)
    assert canceled.status == 200, canceled.body
    assert quote(one, 10).status == 201

    # A staff edit, saved in this process (a third one): both see the new price and the best row.
    row = Row.objects.get(section=section, name="B")
    row.offer_price = "120.00"
    row.save()
    for url in (one, other):
        priced = quote(url, 2, row="B")
        assert priced.status == 201, priced.body
        assert priced.body["data"]["offer_price"] == 120.0
        best = http(
            "POST",
            url + "/v1/quotes",
            json_body={"event_id": event.event_id, "section_name": "Lower 101", "quantity": 2},
            headers=auth,
        )
        assert best.status == 201, best.body
        assert best.body["data"]["row_name"] == "B"
