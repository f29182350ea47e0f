"""POST /v1/orders: the 201 shape and every error of its check order, through HTTP
(docs/partners/orders.md "Orders", docs/partners/errors.md "Error codes")."""

import re
from datetime import UTC, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.utils import timezone

from catalog.models import Event, Row
from orders.models import Order, OrderStatusHistory
from quotes.models import Quote
from tests.conftest import assert_error, issue_token, make_partner
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quote_token, quotes_written

from .conftest import PDF_BYTES, order_form, pdf_upload, post_order

pytestmark = pytest.mark.django_db

EXP_DT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$")
ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def test_order_create_answers_201_with_the_spec_order_shape(auth_client, quote, row):
    token = quote_token(quote)
    response = post_order(auth_client, order_form(quote, quote_id=token, partner_reference="A-10042"))

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["success"] is True
    data = body["data"]
    assert set(data) == {
        "order_id", "event_id", "section_name", "section_name_display", "row_name", "row_name_display",
        "quantity", "general_admission", "face_value", "total_price", "status", "quotes", "restrictions",
        "restriction_detail", "primary_site", "created_at", "delivery_type", "is_ready_to_deliver",
        "in_hand_date", "transfer_address", "transfer", "partner_reference", "seller_email", "livemode",
    }  # fmt: skip
    assert data["transfer"] == {
        "state": "none", "quantity_detected": 0, "source": None, "detected_at": None, "accepted_at": None,
    }  # fmt: skip
    assert data["order_id"].startswith("ord_")
    assert data["event_id"] == quote.event.event_id
    assert data["section_name"] == quote.section_name and isinstance(data["section_name"], str)
    assert data["section_name_display"] == quote.section_name_display
    assert data["row_name"] == "F" and data["row_name_display"] == "Row F"
    assert data["quantity"] == 2 and isinstance(data["quantity"], int)
    assert data["general_admission"] is False
    assert data["face_value"] == "85.00"
    assert isinstance(data["total_price"], float | int) and not isinstance(data["total_price"], bool)
    assert Decimal(str(data["total_price"])) == Decimal("170.00")
    assert data["status"] == "accepted"
    assert len(data["quotes"]) == 1
    snapshot = data["quotes"][0]
    assert set(snapshot) == {"offer_price", "exp_dt", "quote_id"}
    assert isinstance(snapshot["offer_price"], float | int) and Decimal(
        str(snapshot["offer_price"])
    ) == Decimal("85")
    assert EXP_DT.match(snapshot["exp_dt"]), snapshot["exp_dt"]
    assert snapshot["exp_dt"] == quote.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    assert snapshot["quote_id"] == token
    assert data["restrictions"] == ["Obstructed view"]
    assert data["restriction_detail"] == "Partial view of the stage"
    assert data["primary_site"] == "ticketmaster"
    assert ISO_Z.match(data["created_at"])
    assert data["delivery_type"] == "mobile_transfer"
    assert data["is_ready_to_deliver"] is False
    assert data["in_hand_date"] == (quote.event.event_date - timedelta(days=7)).isoformat()
    assert data["transfer_address"].endswith("@transfers.buyback.example")
    assert data["partner_reference"] == "A-10042"
    assert data["seller_email"] is None  # not sent: null, not an empty string

    order = Order.objects.get(order_id=data["order_id"])
    assert order.status == Order.Status.ACCEPTED
    row.refresh_from_db()
    assert row.available_quantity == 8
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is not None
    history = list(OrderStatusHistory.objects.filter(order=order))
    assert [(h.from_status, h.to_status) for h in history] == [("", "accepted")]


def test_order_create_without_restrictions_gives_empty_list_and_null_detail(auth_client, partner):
    row = order_row(restrictions=[], restriction_detail=None)
    quote = QuoteFactory(partner=partner, row=row)
    data = post_order(auth_client, order_form(quote)).json()["data"]
    assert data["restrictions"] == []
    assert data["restriction_detail"] is None


def test_order_create_ready_to_deliver_needs_no_in_hand_date(auth_client, quote):
    response = post_order(auth_client, order_form(quote, is_ready_to_deliver="TRUE", in_hand_date=None))
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["is_ready_to_deliver"] is True
    assert data["in_hand_date"] is None


@pytest.mark.parametrize(
    "value,expected",
    [("true", True), ("True", True), ("1", True), ("false", False), ("FALSE", False), ("0", False)],
)
def test_order_create_accepts_form_booleans(auth_client, quote, value, expected):
    response = post_order(auth_client, order_form(quote, is_ready_to_deliver=value))
    assert response.status_code == 201, response.content
    assert response.json()["data"]["is_ready_to_deliver"] is expected


@pytest.mark.parametrize("value", ["yes", "on", "2", "", "truee"])
def test_order_create_rejects_other_booleans(auth_client, quote, value):
    error = assert_error(
        post_order(auth_client, order_form(quote, is_ready_to_deliver=value)), 400, "VALIDATION_ERROR"
    )
    assert error["details"]["field"] == "is_ready_to_deliver"


def test_order_create_echoes_seller_email_and_name(auth_client, quote):
    response = post_order(
        auth_client, order_form(quote, seller_email="seller@example.org", seller_name="Sam Seller")
    )
    assert response.status_code == 201
    assert response.json()["data"]["seller_email"] == "seller@example.org"
    assert Order.objects.get().seller_name == "Sam Seller"


@pytest.mark.parametrize("delivery_type", ["mobile_transfer", "mobile_qr", "pdf"])
def test_order_create_with_each_delivery_type(auth_client, quote, delivery_type):
    form = order_form(quote, delivery_type=delivery_type)
    if delivery_type == "pdf":
        form["file"] = pdf_upload()
    response = post_order(auth_client, form)
    assert response.status_code == 201, response.content
    assert response.json()["data"]["delivery_type"] == delivery_type
    order = Order.objects.get()
    assert order.has_ticket_file is (delivery_type == "pdf")


# --- the errors of POST /v1/orders, one by one ------------------------------------------------------------
def test_order_create_without_token_is_unauthorized(api_client, quote):
    assert_error(post_order(api_client, order_form(quote)), 401, "UNAUTHORIZED")


def test_order_create_with_garbage_token_is_unauthorized(api_client, quote):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert_error(post_order(api_client, order_form(quote)), 401, "UNAUTHORIZED")


def test_order_create_with_expired_token_is_token_expired(partner_creds, quote):
    from rest_framework.test import APIClient

    client = APIClient()
    with time_machine.travel(timezone.now() - timedelta(hours=2), tick=False):
        token = issue_token(client, partner_creds)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert_error(post_order(client, order_form(quote)), 401, "TOKEN_EXPIRED")
    assert Order.objects.count() == 0


def test_order_create_unknown_quote_is_quote_not_found(auth_client, quote):
    quote_id = quote_token(quote)
    tampered = quote_id[:-2] + ("AA" if not quote_id.endswith("AA") else "BB")
    assert_error(post_order(auth_client, order_form(quote, quote_id=tampered)), 404, "QUOTE_NOT_FOUND")
    assert_error(post_order(auth_client, order_form(quote, quote_id="qte_nonsense")), 404, "QUOTE_NOT_FOUND")


def test_order_create_for_deleted_quote_is_quote_not_found(auth_client, quote):
    form = order_form(quote)
    quotes_written()
    Quote.objects.filter(pk=quote.pk).delete()
    assert_error(post_order(auth_client, form), 404, "QUOTE_NOT_FOUND")


def test_order_create_with_another_partners_quote_is_forbidden(other_auth_client, quote, row):
    assert_error(post_order(other_auth_client, order_form(quote)), 403, "FORBIDDEN")
    row.refresh_from_db()
    assert row.available_quantity == 10
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is None


def test_order_create_with_expired_quote_is_quote_expired(auth_client, quote):
    form = order_form(quote)
    with time_machine.travel(quote.expires_at + timedelta(seconds=1), tick=False):
        error = assert_error(post_order(auth_client, form), 422, "QUOTE_EXPIRED")
    assert error["details"]["quote_id"] == form["quote_id"]
    assert error["details"]["expired_at"] == quote.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_order_create_with_used_quote_is_quote_already_consumed(auth_client, quote, row):
    assert post_order(auth_client, order_form(quote)).status_code == 201
    assert_error(post_order(auth_client, order_form(quote)), 422, "QUOTE_ALREADY_CONSUMED")
    row.refresh_from_db()
    assert row.available_quantity == 8
    assert Order.objects.count() == 1


def test_consumed_quote_stays_already_consumed_after_its_ttl(auth_client, quote):
    assert post_order(auth_client, order_form(quote)).status_code == 201
    with time_machine.travel(quote.expires_at + timedelta(minutes=5), tick=False):
        assert_error(post_order(auth_client, order_form(quote)), 422, "QUOTE_ALREADY_CONSUMED")


@pytest.mark.parametrize("value", ["paper", "PDF", "", "mobile"])
def test_order_create_with_unknown_delivery_type_is_validation_error(auth_client, quote, value):
    error = assert_error(
        post_order(auth_client, order_form(quote, delivery_type=value)), 400, "VALIDATION_ERROR"
    )
    assert error["details"]["field"] == "delivery_type"


def test_order_create_not_ready_without_in_hand_date_is_in_hand_date_required(auth_client, quote):
    response = post_order(auth_client, order_form(quote, is_ready_to_deliver="false", in_hand_date=None))
    assert_error(response, 400, "IN_HAND_DATE_REQUIRED")
    response = post_order(auth_client, order_form(quote, is_ready_to_deliver="0", in_hand_date=""))
    assert_error(response, 400, "IN_HAND_DATE_REQUIRED")


def test_order_create_pdf_without_file_is_file_required(auth_client, quote):
    assert_error(post_order(auth_client, order_form(quote, delivery_type="pdf")), 400, "FILE_REQUIRED")


def test_order_create_in_hand_date_after_event_is_invalid_delivery_deadline(auth_client, quote):
    late = quote.event.event_date + timedelta(days=1)
    error = assert_error(
        post_order(auth_client, order_form(quote, in_hand_date=late.isoformat())),
        422,
        "INVALID_DELIVERY_DEADLINE",
    )
    assert error["details"]["event_date"] == quote.event.event_date.isoformat()


@pytest.mark.parametrize("days_before", [0, 1])
def test_order_create_in_hand_date_too_close_is_invalid_delivery_deadline(auth_client, quote, days_before):
    close = quote.event.event_date - timedelta(days=days_before)
    response = post_order(auth_client, order_form(quote, in_hand_date=close.isoformat()))
    assert_error(response, 422, "INVALID_DELIVERY_DEADLINE")
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is None


def test_order_create_in_hand_date_exactly_two_days_before_is_accepted(auth_client, quote):
    edge = quote.event.event_date - timedelta(days=2)
    response = post_order(auth_client, order_form(quote, in_hand_date=edge.isoformat()))
    assert response.status_code == 201, response.content


def test_in_hand_date_is_judged_against_the_venue_local_date(auth_client, partner):
    # 01:30 UTC on the 12th is still the 11th in Los Angeles: the local event date is the 11th.
    from tests.catalog.factories import EventFactory, SectionFactory, VenueFactory

    starts = (timezone.now() + timedelta(days=40)).replace(hour=1, minute=30, second=0, microsecond=0)
    event = EventFactory(venue=VenueFactory(timezone="America/Los_Angeles"), starts_at=starts)
    assert event.event_date == (starts - timedelta(days=1)).date()
    row = order_row(section=SectionFactory(event=event))
    quote = QuoteFactory(partner=partner, row=row)
    utc_based = starts.date() - timedelta(days=2)  # valid against the UTC date, one day too late locally
    response = post_order(auth_client, order_form(quote, in_hand_date=utc_based.isoformat()))
    assert_error(response, 422, "INVALID_DELIVERY_DEADLINE")
    ok = event.event_date - timedelta(days=2)
    assert post_order(auth_client, order_form(quote, in_hand_date=ok.isoformat())).status_code == 201


def test_order_create_for_started_event_is_event_expired(auth_client, quote):
    form = order_form(quote, is_ready_to_deliver="true", in_hand_date=None)
    Event.objects.filter(pk=quote.event_id).update(starts_at=timezone.now() - timedelta(minutes=1))
    assert_error(post_order(auth_client, form), 422, "EVENT_EXPIRED")


def test_order_create_for_canceled_event_is_event_expired(auth_client, quote):
    Event.objects.filter(pk=quote.event_id).update(status=Event.Status.CANCELED)
    assert_error(post_order(auth_client, order_form(quote)), 422, "EVENT_EXPIRED")


def test_order_create_when_row_ran_out_after_the_quote_is_insufficient_quantity(auth_client, quote, row):
    Row.objects.filter(pk=row.pk).update(available_quantity=1)
    error = assert_error(post_order(auth_client, order_form(quote)), 422, "INSUFFICIENT_QUANTITY")
    assert error["details"] == {"requested": 2, "available": 1}
    quotes_written()
    assert Quote.objects.get(pk=quote.pk).consumed_at is None  # rolled back with the failed decrement
    assert Order.objects.count() == 0


def test_order_create_without_payment_methods_is_payout_method_not_configured(db, row):
    from rest_framework.test import APIClient

    creds = make_partner(name="No Card Co", payment_methods=False, email="nocard@example.com")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    quote = QuoteFactory(partner=creds.partner, row=row)
    error = assert_error(post_order(client, order_form(quote)), 403, "PAYOUT_METHOD_NOT_CONFIGURED")
    assert error["details"]["partner_id"] == creds.partner.public_id
    assert set(error["details"]["missing"]) == {"payout_method", "credit_card"}


def test_order_create_as_json_is_validation_error_on_body(auth_client, quote):
    response = auth_client.post("/v1/orders", order_form(quote), format="json")
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "body"


def test_order_create_reports_missing_fields(auth_client, quote):
    error = assert_error(auth_client.post("/v1/orders", {}, format="multipart"), 400, "VALIDATION_ERROR")
    fields = {e["field"] for e in error["details"]["errors"]}
    assert {"quote_id", "delivery_type", "is_ready_to_deliver"} <= fields


def test_partner_reference_longer_than_64_is_validation_error(auth_client, quote):
    error = assert_error(
        post_order(auth_client, order_form(quote, partner_reference="x" * 65)), 400, "VALIDATION_ERROR"
    )
    assert error["details"]["field"] == "partner_reference"


def test_form_errors_come_in_the_spec_table_order(auth_client, quote):
    # delivery_type wrong + no in_hand_date + pdf-less: the field check wins.
    form = order_form(quote, delivery_type="paper", is_ready_to_deliver="false", in_hand_date=None)
    assert (
        assert_error(post_order(auth_client, form), 400, "VALIDATION_ERROR")["details"]["field"]
        == "delivery_type"
    )
    # no in_hand_date and pdf without file: IN_HAND_DATE_REQUIRED before FILE_REQUIRED.
    form = order_form(quote, delivery_type="pdf", is_ready_to_deliver="false", in_hand_date=None)
    assert_error(post_order(auth_client, form), 400, "IN_HAND_DATE_REQUIRED")
    # FILE_REQUIRED before a quote problem.
    form = order_form(quote, delivery_type="pdf", quote_id="qte_unknown")
    assert_error(post_order(auth_client, form), 400, "FILE_REQUIRED")


def test_quote_checks_come_before_deadline_and_event_checks(auth_client, other_auth_client, quote):
    late = (quote.event.event_date + timedelta(days=3)).isoformat()
    Event.objects.filter(pk=quote.event_id).update(status=Event.Status.CANCELED)
    assert_error(post_order(other_auth_client, order_form(quote, in_hand_date=late)), 403, "FORBIDDEN")
    assert_error(
        post_order(auth_client, order_form(quote, in_hand_date=late)), 422, "INVALID_DELIVERY_DEADLINE"
    )
    assert_error(post_order(auth_client, order_form(quote)), 422, "EVENT_EXPIRED")


def test_pdf_file_is_stored_privately_under_an_unguessable_name(auth_client, quote, settings):
    form = order_form(quote, delivery_type="pdf", file=pdf_upload())
    response = post_order(auth_client, form)
    assert response.status_code == 201, response.content
    order = Order.objects.get()
    name = order.ticket_file.name
    assert re.match(rf"^tickets/[A-Za-z0-9_-]{{32}}/{order.order_id}\.pdf$", name), name
    with order.ticket_file.open("rb") as fh:
        assert fh.read() == PDF_BYTES
    assert name not in response.content.decode()


@pytest.mark.parametrize(
    "content_type,body",
    [
        ("application/json", ""),
        ("application/x-www-form-urlencoded", "quote_id=x"),
        ("text/plain", "hi"),
        (None, ""),
    ],
)
def test_order_create_needs_a_multipart_body(auth_client, content_type, body):
    kwargs = {"content_type": content_type} if content_type else {"content_type": ""}
    response = auth_client.generic("POST", "/v1/orders", body, **kwargs)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "body"


def test_in_hand_date_in_the_past_is_refused(auth_client, quote):
    from datetime import date

    from .conftest import order_form, post_order

    response = post_order(auth_client, order_form(quote, in_hand_date="0402-03-20"))
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"] == {"field": "in_hand_date", "issue": "in_the_past"}
    yesterday = date.fromordinal(date.today().toordinal() - 3).isoformat()
    error = assert_error(
        post_order(auth_client, order_form(quote, in_hand_date=yesterday)), 400, "VALIDATION_ERROR"
    )
    assert error["details"]["issue"] == "in_the_past"
