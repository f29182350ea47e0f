from datetime import timedelta

import pytest
from django.utils import timezone

from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import make_partner

from .live import Processes


@pytest.fixture
def processes(tmp_path):
    """Processes started by the test (gunicorn, Celery); every one is stopped at the end."""
    started = Processes(tmp_path)
    yield started
    started.stop_all()


@pytest.fixture
def row(transactional_db):
    """A row with 10 tickets of an event 30 days ahead (committed: the server processes see it)."""
    event = EventFactory(name="Fault Tolerance Live", starts_at=timezone.now() + timedelta(days=30))
    section = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    return RowFactory(section=section, name="A", available_quantity=10)


@pytest.fixture
def creds(transactional_db):
    return make_partner(name="Faulty Resale", email="ops@faulty.example")


def quote_body(row, quantity: int = 1) -> dict:
    return {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": quantity,
        "user_metadata": {"email": "seller@faulty.example"},
    }


ORDER_FORM = {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}
