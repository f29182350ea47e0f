"""Fixtures for the orders tests: a quotable row, a quote of ``partner``, and order-form helpers."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quote_token

PDF_BYTES = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def pdf_upload(content: bytes = PDF_BYTES, name: str = "tickets.pdf") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/pdf")


def order_form(quote, **overrides) -> dict:
    """A valid multipart form for ``quote``: mobile transfer, delivered 7 days before the event."""
    form = {
        "quote_id": quote_token(quote),
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": "false",
        "in_hand_date": (quote.event.event_date - timedelta(days=7)).isoformat(),
    }
    form.update(overrides)
    return {k: v for k, v in form.items() if v is not None}


def post_order(client, form: dict):
    return client.post("/v1/orders", form, format="multipart")


@pytest.fixture
def row(db):
    return order_row(available_quantity=10)


@pytest.fixture
def quote(partner, row):
    return QuoteFactory(partner=partner, row=row, quantity=2)


def create_order(partner, *, row=None, quantity: int = 2, **overrides):
    """An ``accepted`` order of ``partner`` made through the service (no confirmation ran)."""
    from orders.services import order_create
    from tests.orders.factories import order_row
    from tests.quotes.factories import QuoteFactory, quote_token

    row = row or order_row(available_quantity=50)
    quote = QuoteFactory(partner=partner, row=row, quantity=quantity)
    fields = {
        "partner_pk": partner.pk,
        "actor": f"partner:{partner.public_id}",
        "quote_id": quote_token(quote),
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": False,
        "in_hand_date": quote.event.event_date - timedelta(days=7),
    }
    fields.update(overrides)
    return order_create(**fields)


def narrow_token_client(partner, scope: str):
    """A client whose token carries only ``scope``."""
    from datetime import UTC, datetime

    from rest_framework.test import APIClient

    from partners import tokens

    session = partner.token_sessions.create(scope=scope, expires_at=datetime.now(UTC) + timedelta(hours=1))
    token = tokens.sign(
        partner_id=partner.public_id,
        session_id=session.session_id,
        expires_at=session.expires_at,
        scope=scope,
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client
