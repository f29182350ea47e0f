"""GET /v1/quotes/{quote_id}: status over time, ownership, tampered and foreign ids."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from quotes.codec import encode_quote_id
from quotes.models import Quote
from quotes.serializers import QuoteDetailSerializer
from quotes.services import quote_create, quote_purge_expired
from tests.catalog.conftest import client_with_scope
from tests.conftest import assert_error, issue_token, make_partner
from tests.quotes.factories import quotes_written

pytestmark = pytest.mark.django_db


@pytest.fixture
def quote_id(auth_client, quote_body) -> str:
    response = auth_client.post("/v1/quotes", quote_body(), format="json")
    assert response.status_code == 201
    return response.json()["data"]["quote_id"]


def test_quote_detail_returns_the_callers_active_quote(auth_client, quote_id):
    response = auth_client.get(f"/v1/quotes/{quote_id}")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["quote_id"] == quote_id
    assert data["status"] == "active"
    assert data["order_id"] is None
    assert (data["row_name"], data["quantity"], data["offer_price"]) == ("B", 2, 120.5)
    assert set(data) == set(QuoteDetailSerializer().fields)


def test_quote_expires_exactly_at_its_ttl(auth_client, quote_id):
    quotes_written()
    quote = Quote.objects.get()
    assert quote.expires_at - quote.created_at == timedelta(seconds=900)
    with time_machine.travel(quote.expires_at - timedelta(microseconds=1), tick=False):
        assert auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]["status"] == "active"
    with time_machine.travel(quote.expires_at, tick=False):
        assert auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]["status"] == "expired"


def test_quote_ttl_follows_the_setting(auth_client, quote_body, settings):
    settings.QUOTE_TTL_SECONDS = 60
    data = auth_client.post("/v1/quotes", quote_body(), format="json").json()["data"]
    quotes_written()
    quote = Quote.objects.get()
    assert quote.expires_at - quote.created_at == timedelta(seconds=60)
    assert data["expires_at"] == quote.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_quote_detail_shows_a_consumed_quote_as_consumed(auth_client, quote_id):
    quotes_written()
    Quote.objects.update(consumed_at=timezone.now())
    data = auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]
    assert data["status"] == "consumed"
    # Consumed wins over expired.
    with time_machine.travel(timezone.now() + timedelta(minutes=20)):
        assert auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]["status"] == "consumed"


def test_quote_detail_of_another_partners_quote_is_forbidden(other_auth_client, quote_id):
    error = assert_error(other_auth_client.get(f"/v1/quotes/{quote_id}"), 403, "FORBIDDEN")
    assert "user_metadata" not in str(error)


def test_quote_detail_of_a_tampered_id_is_quote_not_found(auth_client, quote_id):
    flipped = quote_id[:-3] + ("A" if quote_id[-3] != "A" else "B") + quote_id[-2:]
    assert_error(auth_client.get(f"/v1/quotes/{flipped}"), 404, "QUOTE_NOT_FOUND")


@pytest.mark.parametrize(
    "make_bad",
    [
        lambda q: q[:-1],  # truncated
        lambda q: q[:20],
        lambda q: q + "AAAA",  # extended
        lambda q: q.replace("qte_", "qtx_"),
        lambda q: "qte_" + "A" * 48,
        lambda q: "garbage",
        lambda q: "12",  # a bare primary key
        lambda q: "qte_" + "%25%2F..",
        lambda q: "x" * 500,
    ],
)
def test_quote_detail_of_a_malformed_id_is_quote_not_found(auth_client, quote_id, make_bad):
    assert_error(auth_client.get(f"/v1/quotes/{make_bad(quote_id)}"), 404, "QUOTE_NOT_FOUND")


def test_quote_detail_of_an_id_made_with_another_key_is_quote_not_found(auth_client, quote_id, settings):
    quotes_written()
    quote = Quote.objects.get()
    settings.QUOTE_ENCRYPTION_KEY = "someone-elses-key"
    foreign = encode_quote_id(quote)
    settings.QUOTE_ENCRYPTION_KEY = "dev-only-quote-encryption-key"
    settings.QUOTE_ENCRYPTION_OLD_KEYS = []
    assert_error(auth_client.get(f"/v1/quotes/{foreign}"), 404, "QUOTE_NOT_FOUND")


def test_quote_detail_of_a_well_formed_id_of_no_quote_is_quote_not_found(auth_client, db):
    assert_error(auth_client.get(f"/v1/quotes/{encode_quote_id(987654321)}"), 404, "QUOTE_NOT_FOUND")


def test_quote_ids_made_before_a_key_rotation_still_work(auth_client, quote_id, settings):
    old_key = settings.QUOTE_ENCRYPTION_KEY
    settings.QUOTE_ENCRYPTION_KEY = "the-new-key"
    settings.QUOTE_ENCRYPTION_OLD_KEYS = [old_key]
    # The id the partner holds keeps working and is echoed unchanged.
    assert auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]["quote_id"] == quote_id
    quotes_written()
    fresh = encode_quote_id(Quote.objects.get())
    assert fresh != quote_id  # new ids are made with the new key
    assert auth_client.get(f"/v1/quotes/{fresh}").status_code == 200
    settings.QUOTE_ENCRYPTION_OLD_KEYS = []
    assert_error(auth_client.get(f"/v1/quotes/{quote_id}"), 404, "QUOTE_NOT_FOUND")
    assert auth_client.get(f"/v1/quotes/{fresh}").status_code == 200


def test_quote_detail_without_token_is_unauthorized(api_client, quote_id):
    assert_error(api_client.get(f"/v1/quotes/{quote_id}"), 401, "UNAUTHORIZED")


def test_quote_detail_needs_quotes_write_scope(partner, quote_id):
    assert_error(client_with_scope(partner, "events:read").get(f"/v1/quotes/{quote_id}"), 403, "FORBIDDEN")


def test_quote_detail_does_not_need_payment_methods(api_client, event):
    creds = make_partner(name="Lapsed", payment_methods=False, email="l@example.com")
    quote = quote_create(
        partner_pk=creds.partner.pk, event_id=event.event_id, section_name="Floor GA", quantity=1
    )
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(api_client, creds)}")
    assert api_client.get(f"/v1/quotes/{encode_quote_id(quote)}").status_code == 200


def test_quote_detail_names_the_order_once_the_quote_is_used(
    auth_client, quote_id, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/v1/orders",
            {"quote_id": quote_id, "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"},
            format="multipart",
        )
    assert response.status_code == 201, response.content
    data = auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]
    assert data["status"] == "consumed"
    assert data["order_id"] == response.json()["data"]["order_id"]
    # The purge never touches a quote an order holds, however old.
    with time_machine.travel(timezone.now() + timedelta(days=400)):
        assert quote_purge_expired(retention_days=0) == 0
    quotes_written()
    assert Quote.objects.filter(pk=Quote.objects.get().pk).exists()
