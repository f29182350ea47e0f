from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from partners.models import PortalUser
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import issue_token


@pytest.fixture
def row(db):
    """Row "A" of "Lower 101": 20 tickets at 120.50 each, face value 150.00, event 30 days ahead."""
    event = EventFactory(name="Hostile Takeover Live", starts_at=timezone.now() + timedelta(days=30))
    section = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    return RowFactory(
        section=section, name="A", available_quantity=20, offer_price="120.50", face_value="150.00"
    )


def quote_body(row, **extra) -> dict:
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    body.update(extra)
    return body


ORDER_FORM = {"delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"}


@dataclass
class Owned:
    """What partner A owns: an open quote, a consumed quote and its order."""

    quote_id: str
    consumed_quote_id: str
    order_id: str


def make_owned(client: APIClient, row) -> Owned:
    quotes = []
    for _ in range(2):
        response = client.post("/v1/quotes", quote_body(row), format="json")
        assert response.status_code == 201, response.content
        quotes.append(response.json()["data"]["quote_id"])
    response = client.post("/v1/orders", {"quote_id": quotes[1], **ORDER_FORM}, format="multipart")
    assert response.status_code == 201, response.content
    return Owned(quotes[0], quotes[1], response.json()["data"]["order_id"])


@pytest.fixture
def owned(auth_client, row) -> Owned:
    return make_owned(auth_client, row)


def portal_client(partner, email: str) -> APIClient:
    """A browser signed in to the portal as a user of ``partner``."""
    user = get_user_model().objects.create_user(username=email, email=email, password="x-unused-9f3k")
    PortalUser.objects.create(user=user, partner=partner)
    client = APIClient()
    client.force_login(user)
    return client


def bearer(client: APIClient, creds) -> APIClient:
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    return client
