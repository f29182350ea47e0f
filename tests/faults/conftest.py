import uuid
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from config.celery import app as celery_app
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import make_partner

from .live import FakeSmtp


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


def _reset_router() -> None:
    # Celery builds its router once per app and caches it; drop it so the routes set here apply.
    celery_app.amqp._rtable = None
    celery_app.amqp.__dict__.pop("router", None)


@pytest.fixture
def worker_queue(settings):
    """The orders and payouts tasks (the confirmation among them) go through the real broker to a queue of
    this test's own; afterwards the queue and any message a killed worker left unacknowledged are dropped."""
    if not settings.REDIS_URL:
        pytest.fail("this test needs REDIS_URL (make test sets it)")
    queue = f"faults-{uuid.uuid4().hex[:10]}"
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_routes)
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_routes = {"orders.tasks.*": {"queue": queue}, "payouts.tasks.*": {"queue": queue}}
    _reset_router()
    yield queue
    celery_app.conf.task_always_eager, routes = previous
    celery_app.conf.task_routes = routes
    _reset_router()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(queue)
    for tag, payload in client.hgetall("unacked").items():
        if queue.encode() in payload:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


@pytest.fixture
def smtp():
    """A recording SMTP server (``hang`` makes it stall before its greeting)."""
    server = FakeSmtp()
    yield server
    server.close()
