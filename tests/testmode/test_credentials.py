"""Test-mode credentials: provisioned with the live pair, shown once, rotated on their own, and tokens that
carry the mode (docs/partners/test-mode.md "Test mode")."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from partners import services, session_services
from partners.authentication import BearerTokenAuthentication
from partners.models import TokenSession
from tests.conftest import PartnerWithCredentials, assert_error, issue_token

from .conftest import client_for


def token_response(client_id: str, client_secret: str):
    return APIClient().post(
        "/v1/auth/token",
        {"client_id": client_id, "client_secret": client_secret, "grant_type": "client_credentials"},
        format="json",
    )


def test_partner_create_issues_a_test_pair_with_prefixes(pairs):
    assert pairs.test.client_id.startswith("cli_test_")
    assert pairs.test.client_secret.startswith("sec_test_")
    assert pairs.live.client_id.startswith("cli_") and not pairs.live.client_id.startswith("cli_test_")
    assert pairs.live.client_secret.startswith("sec_") and not pairs.live.client_secret.startswith(
        "sec_test_"
    )
    # Only digests are kept.
    stored = pairs.partner.test_credential
    assert pairs.test.client_secret not in (stored.secret_digest, stored.secret_last4)


def test_a_test_token_is_test_mode_on_its_session_and_principal(pairs, rf):
    response = token_response(pairs.test.client_id, pairs.test.client_secret)
    assert response.status_code == 200, response.content
    token = response.json()["data"]["access_token"]
    session_services.token_sessions_flush()  # with Redis the session reaches the table by the batched writer
    assert TokenSession.objects.get(partner=pairs.partner).livemode is False
    request = rf.get("/v1/orders", HTTP_AUTHORIZATION=f"Bearer {token}")
    principal, _ = BearerTokenAuthentication().authenticate(request)
    assert principal.livemode is False
    live = token_response(pairs.live.client_id, pairs.live.client_secret).json()["data"]["access_token"]
    principal, _ = BearerTokenAuthentication().authenticate(rf.get("/", HTTP_AUTHORIZATION=f"Bearer {live}"))
    assert principal.livemode is True


def test_the_pairs_are_not_interchangeable(pairs):
    assert_error(token_response(pairs.test.client_id, pairs.live.client_secret), 401, "INVALID_CREDENTIALS")
    assert_error(token_response(pairs.live.client_id, pairs.test.client_secret), 401, "INVALID_CREDENTIALS")


def test_rotating_the_test_pair_stops_its_tokens_and_old_secret_only(pairs):
    test_client, live_client = client_for(pairs.test), client_for(pairs.live)
    rotated = services.credentials_rotate(partner=pairs.partner, livemode=False)
    assert rotated.client_id == pairs.test.client_id
    assert rotated.client_secret.startswith("sec_test_") and rotated.client_secret != pairs.test.client_secret
    assert_error(test_client.get("/v1/orders"), 401, "UNAUTHORIZED")
    assert live_client.get("/v1/orders").status_code == 200  # the live pair is another pair
    assert_error(token_response(pairs.test.client_id, pairs.test.client_secret), 401, "INVALID_CREDENTIALS")
    new_client = APIClient()
    token = issue_token(
        new_client, PartnerWithCredentials(pairs.partner, rotated.client_id, rotated.client_secret)
    )
    assert token


def test_rotating_the_live_pair_leaves_test_tokens_working(pairs):
    test_client, live_client = client_for(pairs.test), client_for(pairs.live)
    services.credentials_rotate(partner=pairs.partner)
    assert_error(live_client.get("/v1/orders"), 401, "UNAUTHORIZED")
    assert test_client.get("/v1/orders").status_code == 200


def test_create_partner_json_prints_both_pairs(db):
    out = StringIO()
    call_command("create_partner", "--name", "Json Partner", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert set(result) == {"partner_id", "client_id", "client_secret", "test_client_id", "test_client_secret"}
    assert result["test_client_id"].startswith("cli_test_")
    assert token_response(result["test_client_id"], result["test_client_secret"]).status_code == 200
    assert token_response(result["client_id"], result["client_secret"]).status_code == 200


@pytest.mark.parametrize("mode", ["live", "test"])
def test_rotate_credentials_rotates_the_pair_the_client_id_names(pairs, mode):
    creds, other = (pairs.test, pairs.live) if mode == "test" else (pairs.live, pairs.test)
    out = StringIO()
    call_command("rotate_credentials", creds.client_id, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["client_id"] == creds.client_id
    assert result["client_secret"].startswith("sec_test_" if mode == "test" else "sec_")
    assert_error(token_response(creds.client_id, creds.client_secret), 401, "INVALID_CREDENTIALS")
    assert token_response(creds.client_id, result["client_secret"]).status_code == 200
    assert token_response(other.client_id, other.client_secret).status_code == 200  # untouched


def test_the_migration_gives_existing_partners_a_test_client_id_whose_secret_nobody_knows(db):
    """Partners that existed before test mode: a test client_id, and a secret they get by rotating."""
    import importlib

    from django.apps import apps

    from partners.models import PartnerTestCredential

    migration = importlib.import_module("partners.migrations.0004_test_credentials")
    older = services.partner_create(name="Older Partner")
    PartnerTestCredential.objects.filter(partner=older.partner).delete()
    migration.provision_test_credentials(apps, None)
    credential = PartnerTestCredential.objects.get(partner=older.partner)
    assert credential.client_id.startswith("cli_test_") and credential.secret_last4 == ""
    rotated = services.credentials_rotate(partner=older.partner, livemode=False)
    assert rotated.client_id == credential.client_id
    assert token_response(rotated.client_id, rotated.client_secret).status_code == 200
