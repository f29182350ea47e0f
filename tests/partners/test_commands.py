import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from partners.models import Partner, PartnerCredential
from partners.selectors import payment_readiness
from tests.conftest import assert_error

pytestmark = pytest.mark.urls("tests.config.urls_probe")


def _run(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1, "one JSON line on stdout"
    return json.loads(lines[0])


@pytest.mark.django_db
def test_create_partner_prints_one_json_line():
    result = _run("create_partner", "--name", "Resale Ltd", "--email", "ops@resale.example", "--json")
    assert set(result) == {"partner_id", "client_id", "client_secret", "test_client_id", "test_client_secret"}
    assert result["partner_id"].startswith("ptn_")
    assert result["client_id"].startswith("cli_")
    assert result["client_secret"].startswith("sec_")
    partner = Partner.objects.get(public_id=result["partner_id"])
    assert partner.contact_email == "ops@resale.example"
    assert partner.status == "active"
    assert payment_readiness(partner_pk=partner.pk).missing == ["payout_method", "credit_card"]


@pytest.mark.django_db
def test_create_partner_with_payment_methods_and_suspended():
    result = _run("create_partner", "--name", "Ready Co", "--with-payment-methods", "--suspended", "--json")
    partner = Partner.objects.get(public_id=result["partner_id"])
    assert partner.status == "suspended"
    assert payment_readiness(partner_pk=partner.pk).ready


@pytest.mark.django_db
def test_created_credentials_work_at_the_token_endpoint(api_client):
    result = _run("create_partner", "--name", "Works Co", "--json")
    response = api_client.post(
        "/v1/auth/token",
        {
            "client_id": result["client_id"],
            "client_secret": result["client_secret"],
            "grant_type": "client_credentials",
        },
        format="json",
    )
    assert response.status_code == 200


@pytest.mark.django_db
def test_rotate_credentials_keeps_client_id_and_kills_old_secret_and_tokens(api_client):
    created = _run("create_partner", "--name", "Rotating Co", "--with-payment-methods", "--json")
    body = {
        "client_id": created["client_id"],
        "client_secret": created["client_secret"],
        "grant_type": "client_credentials",
    }
    old_token = api_client.post("/v1/auth/token", body, format="json").json()["data"]["access_token"]

    rotated = _run("rotate_credentials", created["client_id"], "--json")
    assert rotated["client_id"] == created["client_id"]
    assert rotated["partner_id"] == created["partner_id"]
    assert rotated["client_secret"] != created["client_secret"]

    assert_error(api_client.post("/v1/auth/token", body, format="json"), 401, "INVALID_CREDENTIALS")
    assert_error(api_client.get("/v1/_scoped", HTTP_AUTHORIZATION=f"Bearer {old_token}"), 401, "UNAUTHORIZED")
    body["client_secret"] = rotated["client_secret"]
    assert api_client.post("/v1/auth/token", body, format="json").status_code == 200
    assert PartnerCredential.objects.get(client_id=created["client_id"]).rotated_at is not None


@pytest.mark.django_db
def test_rotate_credentials_for_unknown_client_fails():
    with pytest.raises(CommandError):
        call_command("rotate_credentials", "cli_nope", "--json", stdout=StringIO())
