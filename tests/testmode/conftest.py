"""Fixtures for test mode: one partner with both pairs of credentials, a client per mode, and helpers that
quote and order through the API."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from tests.conftest import PartnerWithCredentials, issue_token
from tests.orders.factories import RowFactory
from tests.webhooks.conftest import receiver  # noqa: F401  (a real HTTP receiver for webhook deliveries)


@dataclass
class BothPairs:
    partner: object
    live: PartnerWithCredentials
    test: PartnerWithCredentials


def make_partner_with_both_pairs(*, name: str = "Acme Tickets", payment_methods: bool = True) -> BothPairs:
    from partners import services

    issued = services.partner_create(name=name, contact_email="ops@acme.example")
    if payment_methods:
        from payouts.services.methods import payment_methods_create_sandbox

        payment_methods_create_sandbox(partner=issued.partner)
    return BothPairs(
        partner=issued.partner,
        live=PartnerWithCredentials(issued.partner, issued.client_id, issued.client_secret),
        test=PartnerWithCredentials(issued.partner, issued.test_client_id, issued.test_client_secret),
    )


def client_for(creds: PartnerWithCredentials) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    return client


@pytest.fixture
def pairs(db) -> BothPairs:
    return make_partner_with_both_pairs()


@pytest.fixture
def partner(pairs):
    return pairs.partner


@pytest.fixture
def live_client(pairs) -> APIClient:
    return client_for(pairs.live)


@pytest.fixture
def test_client(pairs) -> APIClient:
    return client_for(pairs.test)


@pytest.fixture
def row(db):
    return RowFactory(available_quantity=10)


def api_quote(client: APIClient, row, *, quantity: int = 2) -> dict:
    response = client.post(
        "/v1/quotes",
        {
            "event_id": row.section.event.event_id,
            "section_name": row.section.name,
            "row_name": row.name,
            "quantity": quantity,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["data"]


def order_form(quote: dict, row, **extra) -> dict:
    return {
        "quote_id": quote["quote_id"],
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": "false",
        "in_hand_date": (row.section.event.event_date - timedelta(days=7)).isoformat(),
        **extra,
    }


def api_order(client: APIClient, row, *, quantity: int = 2, **extra) -> dict:
    quote = api_quote(client, row, quantity=quantity)
    response = client.post("/v1/orders", order_form(quote, row, **extra), format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["data"]
