"""Fields a partner may not set (prices, statuses, ownership, ids) are ignored when sent anyway."""

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from orders.models import Order
from partners import tokens
from quotes.models import Quote
from tests.conftest import assert_error
from tests.quotes.factories import quotes_written

from .conftest import ORDER_FORM, quote_body

# The forged expiry lies decades after the clock of these tests.
pytestmark = pytest.mark.travel(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))

FORGED_QUOTE = {
    "offer_price": "0.01",
    "total_price": 0.02,
    "face_value": "9999.00",
    "currency": "BTC",
    "status": "consumed",
    "quote_id": "qte_forged",
    "expires_at": "2099-01-01T00:00:00Z",
    "exp_dt": "2099-01-01T00:00:00.000000",
    "consumed_at": "2020-01-01T00:00:00Z",
    "available_quantity": 100000,
    "general_admission": True,
    "restrictions": [],
}


def test_quote_ignores_forged_price_status_expiry_and_owner(
    auth_client, other_auth_client, other_partner_creds, partner, row
):
    body = quote_body(
        row,
        **FORGED_QUOTE,
        partner_id=other_partner_creds.partner.public_id,
        partner=other_partner_creds.partner.pk,
    )
    response = auth_client.post("/v1/quotes", body, format="json")

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert (data["offer_price"], data["total_price"], data["face_value"]) == (120.5, 241.0, "150.00")
    assert (data["status"], data["currency"], data["quantity"]) == ("active", "USD", 2)
    assert data["quote_id"] != "qte_forged"
    expires_at = parse_datetime(data["expires_at"])
    assert expires_at <= timezone.now() + timedelta(seconds=settings.QUOTE_TTL_SECONDS + 5)
    quotes_written()
    quote = Quote.objects.get()
    assert quote.partner_id == partner.pk and quote.consumed_at is None
    # It is the caller's quote, not the partner named in the body.
    assert auth_client.get(f"/v1/quotes/{data['quote_id']}").status_code == 200
    assert_error(other_auth_client.get(f"/v1/quotes/{data['quote_id']}"), 403, "FORBIDDEN")
    row.refresh_from_db()
    assert row.available_quantity == 20


def test_order_ignores_forged_price_status_ids_and_owner(
    auth_client, other_auth_client, other_partner_creds, partner, row
):
    quote_id = auth_client.post("/v1/quotes", quote_body(row), format="json").json()["data"]["quote_id"]
    form = {
        "quote_id": quote_id,
        **ORDER_FORM,
        "total_price": "0.01",
        "offer_price": "0.01",
        "face_value": "0.01",
        "quantity": "20",
        "status": "paid",
        "order_id": "ord_forged00000000000",
        "transfer_address": "attacker@evil.example",
        "partner_id": other_partner_creds.partner.public_id,
        "partner": str(other_partner_creds.partner.pk),
        "created_at": "2001-01-01T00:00:00Z",
    }
    response = auth_client.post("/v1/orders", form, format="multipart")

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert (data["status"], data["total_price"], data["face_value"], data["quantity"]) == (
        "accepted",
        241.0,
        "150.00",
        2,
    )
    assert data["order_id"] != form["order_id"]
    assert data["transfer_address"] != form["transfer_address"]
    assert not data["created_at"].startswith("2001")
    order = Order.objects.get()
    assert order.partner_id == partner.pk and order.total_price == 241
    assert_error(other_auth_client.get(f"/v1/orders/{data['order_id']}"), 404, "ORDER_NOT_FOUND")
    row.refresh_from_db()
    assert row.available_quantity == 18  # the quote's quantity, not the forged one


def test_cancel_ignores_a_forged_target_status(auth_client, owned):
    response = auth_client.post(f"/v1/orders/{owned.order_id}/cancel", {"status": "paid"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["status"] == "canceled"


def test_token_ignores_forged_scope_lifetime_and_partner(api_client, partner_creds, other_partner_creds):
    response = api_client.post(
        "/v1/auth/token",
        {
            "client_id": partner_creds.client_id,
            "client_secret": partner_creds.client_secret,
            "grant_type": "client_credentials",
            "scope": "admin staff:all",
            "expires_in": 31536000,
            "partner_id": other_partner_creds.partner.public_id,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["scope"] == "events:read quotes:write orders:write webhooks:write"
    assert data["expires_in"] == settings.ACCESS_TOKEN_TTL_SECONDS
    assert tokens.verify(data["access_token"]).partner_id == partner_creds.partner.public_id
