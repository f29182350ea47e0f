"""POST /v1/quotes: the locked price, best-row assignment, every error code and the order of checks."""

from datetime import UTC, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.utils import timezone

from catalog import services as catalog_services
from quotes.codec import decode_quote_id
from quotes.models import Quote
from quotes.serializers import QuoteSerializer
from tests.catalog.conftest import client_with_scope
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import assert_error, issue_token, make_partner
from tests.quotes.factories import quotes_written

pytestmark = pytest.mark.django_db


def create(client, body):
    return client.post("/v1/quotes", body, format="json")


def test_quote_create_locks_the_rows_offer_price(auth_client, partner, event, quote_body):
    # A quote's instants are kept to the millisecond (its id holds them): exp_dt keeps six digits.
    now = timezone.now().replace(microsecond=123456)
    with time_machine.travel(now, tick=False):
        response = create(auth_client, quote_body())
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    expires = (now + timedelta(seconds=900)).astimezone(UTC).replace(microsecond=123000)
    assert data == {
        "quote_id": data["quote_id"],
        "status": "active",
        "event_id": event.event_id,
        "event_name": "Harbor Lights Tour",
        "section_name": "Lower 101",
        "section_name_display": "Lower Level 101",
        "row_name": "B",
        "row_name_display": "Row B",
        "quantity": 2,
        "general_admission": False,
        "offer_price": 120.5,
        "total_price": 241.0,
        "face_value": "165.00",
        "currency": "USD",
        "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "exp_dt": expires.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "restrictions": [],
        "restriction_detail": None,
        "primary_site": "ticketmaster",
        "livemode": True,
    }
    assert data["exp_dt"].endswith(".123000")
    assert set(data) == set(QuoteSerializer().fields)
    quotes_written()
    quote = Quote.objects.get(pk=decode_quote_id(data["quote_id"]))
    assert quote.partner == partner
    assert quote.offer_price == Decimal("120.50") and quote.total_price == Decimal("241.00")


def test_quote_create_exp_dt_always_has_six_fractional_digits(auth_client, event, quote_body):
    with time_machine.travel(timezone.now().replace(microsecond=0), tick=False):
        data = create(auth_client, quote_body()).json()["data"]
    assert data["exp_dt"].endswith(".000000")
    assert "Z" not in data["exp_dt"] and "+" not in data["exp_dt"]


def test_quote_create_does_not_reserve_quantity(auth_client, event, quote_body):
    for _ in range(3):
        assert create(auth_client, quote_body(row_name="A", quantity=8)).status_code == 201
    assert event.sections.get(name="Lower 101").rows.get(name="A").available_quantity == 8


def test_quote_create_money_has_two_decimals_and_no_float_noise(auth_client, event, quote_body):
    section = event.sections.get(name="Lower 101")
    RowFactory(
        section=section,
        name="D",
        offer_price=Decimal("33.33"),
        face_value=Decimal("40"),
        available_quantity=9,
    )
    response = create(auth_client, quote_body(row_name="D", quantity=3))
    assert b'"offer_price":33.33' in response.content
    assert b'"total_price":99.99' in response.content
    assert b'"face_value":"40.00"' in response.content


def test_quote_create_copies_restrictions_and_general_admission(auth_client, event, quote_body):
    data = create(auth_client, quote_body(row_name="C")).json()["data"]
    assert data["restrictions"] == ["Obstructed view"]
    assert data["restriction_detail"] == "Pillar at seats 1-4."
    ga = create(auth_client, quote_body(section_name="Floor GA", row_name="GA")).json()["data"]
    assert ga["general_admission"] is True and ga["face_value"] == "89.50"


def test_quote_create_keeps_user_metadata_without_echoing_it(auth_client, event, quote_body):
    metadata = {
        "first_name": "Dana",
        "last_name": "Reyes",
        "email": "dana@example.com",
        "phone_number": "+1 212 555 0142",
        "shoe_size": 42,
    }
    response = create(auth_client, quote_body(user_metadata=metadata))
    assert response.status_code == 201
    assert "user_metadata" not in response.json()["data"]
    quotes_written()
    quote = Quote.objects.get(pk=decode_quote_id(response.json()["data"]["quote_id"]))
    assert quote.user_metadata == {k: v for k, v in metadata.items() if k != "shoe_size"}


# --- best row --------------------------------------------------------------------------------------------
def test_quote_create_without_row_assigns_the_highest_offer_with_enough_quantity(
    auth_client, event, quote_body
):
    assert create(auth_client, quote_body(row_name=..., quantity=2)).json()["data"]["row_name"] == "A"
    # Row A has 8: 9 tickets go to the next best row that can take them.
    assert create(auth_client, quote_body(row_name=..., quantity=9)).json()["data"]["row_name"] == "B"
    assert create(auth_client, quote_body(row_name=None, quantity=20)).json()["data"]["row_name"] == "C"


def test_quote_create_without_row_in_a_general_admission_section(auth_client, event, quote_body):
    data = create(auth_client, quote_body(section_name="Floor GA", row_name=..., quantity=4)).json()["data"]
    assert (data["row_name"], data["total_price"]) == ("GA", 380.0)


def test_quote_create_without_row_and_no_row_big_enough_is_insufficient_quantity(
    auth_client, event, quote_body
):
    error = assert_error(
        create(auth_client, quote_body(row_name=..., quantity=31)), 422, "INSUFFICIENT_QUANTITY"
    )
    assert error["details"] == {"requested": 31, "available": 30}


# --- errors, each through HTTP ------------------------------------------------------------------------------
def test_quote_create_without_token_is_unauthorized(api_client, event, quote_body):
    assert_error(create(api_client, quote_body()), 401, "UNAUTHORIZED")


def test_quote_create_with_expired_token_is_token_expired(auth_client, event, quote_body):
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=5)):
        assert_error(create(auth_client, quote_body()), 401, "TOKEN_EXPIRED")


def test_quote_create_needs_quotes_write_scope(partner, event, quote_body):
    error = assert_error(create(client_with_scope(partner, "events:read"), quote_body()), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "quotes:write"


def test_quote_create_without_payout_method_is_refused_before_the_body_is_read(api_client, event):
    creds = make_partner(name="No Payments", payment_methods=False, email="np@example.com")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(api_client, creds)}")
    error = assert_error(create(api_client, {"quantity": "lots"}), 403, "PAYOUT_METHOD_NOT_CONFIGURED")
    assert error["details"] == {
        "partner_id": creds.partner.public_id,
        "missing": ["payout_method", "credit_card"],
    }
    quotes_written()
    assert not Quote.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field", "issue"),
    [
        ({"quantity": 0}, "quantity", "out_of_range"),
        ({"quantity": 51}, "quantity", "out_of_range"),
        ({"quantity": "two"}, "quantity", "invalid_type"),
        ({"quantity": ...}, "quantity", "required"),
        ({"event_id": ...}, "event_id", "required"),
        ({"section_name": ""}, "section_name", "required"),
        ({"user_metadata": {"email": "not-an-email"}}, "user_metadata.email", "invalid"),
        ({"user_metadata": "Dana"}, "user_metadata", "invalid_type"),
    ],
)
def test_quote_create_invalid_body_is_validation_error(
    auth_client, event, quote_body, overrides, field, issue
):
    error = assert_error(create(auth_client, quote_body(**overrides)), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == (field, issue)


def test_quote_create_accepts_the_largest_quantity(auth_client, event, quote_body):
    response = create(auth_client, quote_body(section_name="Floor GA", row_name="GA", quantity=40))
    assert response.status_code == 201
    RowFactory(section=event.sections.get(name="Floor GA"), name="GA2", available_quantity=60)
    assert (
        create(auth_client, quote_body(section_name="Floor GA", row_name="GA2", quantity=50)).status_code
        == 201
    )


def test_quote_create_body_that_is_not_json_is_validation_error(auth_client, event):
    response = auth_client.post("/v1/quotes", data="{not json", content_type="application/json")
    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["field"] == "body"


def test_quote_create_unknown_event_is_event_not_found(auth_client, event, quote_body):
    assert_error(create(auth_client, quote_body(event_id="evt_nope")), 404, "EVENT_NOT_FOUND")


def test_quote_create_for_a_past_event_is_event_expired(auth_client, quote_body, event):
    past = EventFactory(starts_at=timezone.now() - timedelta(days=2))
    SectionFactory(event=past, name="Lower 101")
    error = assert_error(create(auth_client, quote_body(event_id=past.event_id)), 422, "EVENT_EXPIRED")
    assert error["details"]["reason"] == "started"


def test_quote_create_is_refused_from_the_moment_the_event_starts(auth_client, quote_body):
    start = timezone.now() + timedelta(minutes=10)
    soon = EventFactory(starts_at=start)
    RowFactory(section=SectionFactory(event=soon, name="Lower 101"), name="B")
    with time_machine.travel(start - timedelta(seconds=1), tick=False):
        assert create(auth_client, quote_body(event_id=soon.event_id)).status_code == 201
    with time_machine.travel(start, tick=False):
        assert_error(create(auth_client, quote_body(event_id=soon.event_id)), 422, "EVENT_EXPIRED")


def test_quote_create_for_a_canceled_event_is_event_expired(auth_client, event, quote_body):
    catalog_services.event_cancel(event=event)
    error = assert_error(create(auth_client, quote_body()), 422, "EVENT_EXPIRED")
    assert error["details"]["reason"] == "canceled"


def test_quote_create_unknown_section_is_section_not_found(auth_client, event, quote_body):
    assert_error(create(auth_client, quote_body(section_name="Upper 999")), 404, "SECTION_NOT_FOUND")


def test_quote_create_unknown_row_is_row_not_found(auth_client, event, quote_body):
    error = assert_error(create(auth_client, quote_body(row_name="ZZ")), 404, "ROW_NOT_FOUND")
    assert error["details"]["row_name"] == "ZZ"


def test_quote_create_more_than_the_row_has_is_insufficient_quantity(auth_client, event, quote_body):
    error = assert_error(
        create(auth_client, quote_body(row_name="A", quantity=9)), 422, "INSUFFICIENT_QUANTITY"
    )
    assert error["details"] == {"requested": 9, "available": 8}
    assert create(auth_client, quote_body(row_name="A", quantity=8)).status_code == 201


def test_quote_create_sold_out_row_is_insufficient_quantity(auth_client, event, quote_body):
    RowFactory(section=event.sections.get(name="Lower 101"), name="Z", available_quantity=0)
    error = assert_error(
        create(auth_client, quote_body(row_name="Z", quantity=1)), 422, "INSUFFICIENT_QUANTITY"
    )
    assert error["details"] == {"requested": 1, "available": 0}


# --- order of checks ------------------------------------------------------------------------------------------
def test_quote_create_checks_body_before_the_event(auth_client, db):
    body = {"event_id": "evt_nope", "section_name": "X", "quantity": 0}
    assert_error(create(auth_client, body), 400, "VALIDATION_ERROR")


def test_quote_create_checks_event_status_before_section_and_row(auth_client, event, quote_body):
    catalog_services.event_cancel(event=event)
    assert_error(create(auth_client, quote_body(section_name="Nope", row_name="Nope")), 422, "EVENT_EXPIRED")


def test_quote_create_checks_section_before_row(auth_client, event, quote_body):
    assert_error(
        create(auth_client, quote_body(section_name="Nope", row_name="Nope")), 404, "SECTION_NOT_FOUND"
    )


def test_quote_create_checks_row_before_quantity(auth_client, event, quote_body):
    assert_error(create(auth_client, quote_body(row_name="Nope", quantity=50)), 404, "ROW_NOT_FOUND")


# --- snapshot ------------------------------------------------------------------------------------------------
def test_quote_snapshot_is_unchanged_by_later_catalog_edits(auth_client, event, quote_body):
    quote_id = create(auth_client, quote_body(row_name="C", quantity=3)).json()["data"]["quote_id"]
    section = event.sections.get(name="Lower 101")
    catalog_services.row_upsert(
        section=section,
        name="C",
        name_display="Row C (renamed)",
        available_quantity=1,
        offer_price=Decimal("10.00"),
        face_value=Decimal("11.00"),
        restrictions=[],
        restriction_detail=None,
    )
    section.name_display = "Renamed section"
    section.save()
    event.name = "Renamed event"
    catalog_services.event_save(event=event)
    data = auth_client.get(f"/v1/quotes/{quote_id}").json()["data"]
    assert (data["offer_price"], data["total_price"], data["face_value"]) == (99.0, 297.0, "150.00")
    assert data["row_name_display"] == "Row C"
    assert data["section_name_display"] == "Lower Level 101"
    assert data["event_name"] == "Harbor Lights Tour"
    assert data["restrictions"] == ["Obstructed view"]
    # New quotes see the new price.
    new = create(auth_client, quote_body(row_name="C", quantity=1)).json()["data"]
    assert new["offer_price"] == 10.0
