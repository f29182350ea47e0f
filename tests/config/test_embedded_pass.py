"""`make test`'s second pass really runs on the embedded default, and the partner flow works there."""

import pytest
from django.conf import settings
from django.db import connection

from tests.catalog.factories import RowFactory, SectionFactory
from tests.conftest import EMBEDDED_PASS

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def test_each_pass_runs_on_its_own_shape():
    """The first pass on PostgreSQL and Redis; the embedded pass (EMBEDDED_PASS=1) on a SQLite file with the
    local-memory cache and Celery tasks in-process, as `make run` serves."""
    if EMBEDDED_PASS:
        assert connection.vendor == "sqlite"
        assert connection.settings_dict["NAME"] not in ("", ":memory:")
        assert "mode=memory" not in str(connection.settings_dict["NAME"])
        assert settings.REDIS_URL == ""
        assert settings.CACHES["default"]["BACKEND"].endswith("LocMemCache")
        assert settings.CELERY_TASK_ALWAYS_EAGER is True
    else:
        assert connection.vendor == "postgresql"
        assert settings.REDIS_URL.startswith("redis://")


@pytest.mark.parametrize("row_name", ["A", None], ids=["named row", "best row"])
def test_a_quote_and_its_order_answer_201(auth_client, row_name):
    """On SQLite a quote answered 500 for every row: its row was read as the driver gives it (a naive start,
    compared with an aware now)."""
    row = RowFactory(section=SectionFactory(name="Lower 101"), name="A", available_quantity=4)
    body = {"event_id": row.section.event.event_id, "section_name": "Lower 101", "quantity": 2}
    if row_name:
        body["row_name"] = row_name
    response = auth_client.post("/v1/quotes", body, format="json")
    assert response.status_code == 201, response.content
    quote = response.json()["data"]
    assert (quote["row_name"], quote["offer_price"], quote["face_value"]) == ("A", 120.5, "150.00")

    form = {"quote_id": quote["quote_id"], "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}
    response = auth_client.post("/v1/orders", form, format="multipart")
    assert response.status_code == 201, response.content
    row.refresh_from_db()
    assert row.available_quantity == 2
