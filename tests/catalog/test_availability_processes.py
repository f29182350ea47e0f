"""Two web processes of the production shape (gunicorn, Redis as the shared cache, each with its own
in-process tier): an order or a cancel made through one shows on the very next read through the other."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import make_partner
from tests.faults.live import bearer_auth, http, production_env

from .factories import EventFactory, RowFactory, SectionFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _rows(url: str, auth: dict, event_id: str) -> dict[str, int]:
    reply = http("GET", f"{url}/v1/events/{event_id}/sections/Lower%20101/rows", headers=auth)
    assert reply.status == 200, reply.body
    return {r["row_name"]: r["available_quantity"] for r in reply.body["data"]["results"]}


def _sections(url: str, auth: dict, event_id: str) -> dict[str, int]:
    reply = http("GET", f"{url}/v1/events/{event_id}/sections", headers=auth)
    assert reply.status == 200, reply.body
    return {s["section_name"]: s["available_quantity"] for s in reply.body["data"]["results"]}


def test_an_order_and_a_cancel_through_one_process_show_at_once_through_the_other(processes, settings):
    if not settings.REDIS_URL:
        pytest.fail("this test needs REDIS_URL (make test sets it)")
    event = EventFactory(name="Two Process Live", starts_at=timezone.now() + timedelta(days=30))
    section = SectionFactory(event=event, name="Lower 101")
    RowFactory(section=section, name="A", available_quantity=10)
    RowFactory(section=section, name="B", available_quantity=4)
    creds = make_partner(name="Split Resale", email="ops@split.example")
    # Pages live 60 s in Redis and 30 s in each process: only the availability version can refresh them.
    env = production_env(CATALOG_CACHE_SECONDS="60", CATALOG_LOCAL_CACHE_SECONDS="30")
    one, other = processes.web(env, name="web-1"), processes.web(env, name="web-2")
    auth = bearer_auth(one, creds)
    event_id = event.event_id

    for url in (one, other):  # both processes hold the pages, in Redis and in their own tier
        assert _rows(url, auth, event_id) == {"A": 10, "B": 4}
        assert _sections(url, auth, event_id) == {"Lower 101": 14}
    rows_path = f"/v1/events/{event_id}/sections/Lower%20101/rows"
    held = http("GET", other + rows_path, headers=auth).headers["ETag"]
    assert http("GET", other + rows_path, headers={**auth, "If-None-Match": held}).status == 304

    quote = http(
        "POST",
        one + "/v1/quotes",
        json_body={"event_id": event_id, "section_name": "Lower 101", "row_name": "A", "quantity": 3},
        headers=auth,
    )
    assert quote.status == 201, quote.body
    created = http(
        "POST",
        one + "/v1/orders",
        form={"quote_id": quote.body["data"]["quote_id"], "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"},
        headers=auth,
    )  # fmt: skip
    assert created.status == 201, created.body
    # The tag read before the order is stale in the other process at once: the full answer, a new tag.
    stale = http("GET", other + rows_path, headers={**auth, "If-None-Match": held})
    assert stale.status == 200, stale.body
    assert {r["row_name"]: r["available_quantity"] for r in stale.body["data"]["results"]} == {"A": 7, "B": 4}
    assert stale.headers["ETag"] != held
    assert (
        http("GET", one + rows_path, headers={**auth, "If-None-Match": stale.headers["ETag"]}).status == 304
    )
    assert _rows(other, auth, event_id) == {"A": 7, "B": 4}
    assert _sections(other, auth, event_id) == {"Lower 101": 11}
    assert _rows(one, auth, event_id) == {"A": 7, "B": 4}

    canceled = http("POST", f"{other}/v1/orders/{created.body['data']['order_id']}/cancel", headers=auth)
    assert canceled.status == 200, canceled.body
    assert (
        http("GET", one + rows_path, headers={**auth, "If-None-Match": stale.headers["ETag"]}).status == 200
    )
    assert _rows(one, auth, event_id) == {"A": 10, "B": 4}
    assert _sections(one, auth, event_id) == {"Lower 101": 14}
    assert _rows(other, auth, event_id) == {"A": 10, "B": 4}
