"""Limits of POST /v1/auth/token: a stranger's failures never lock a partner out, and one address
spraying client_ids is stopped by its own failures."""

import time

import pytest

from tests.conftest import assert_error

TOKEN_URL = "/v1/auth/token"
ATTACKER = "203.0.113.66"
PARTNER_OFFICE = "198.51.100.10"


def _body(client_id: str, secret: str) -> dict:
    return {"client_id": client_id, "client_secret": secret, "grant_type": "client_credentials"}


@pytest.fixture(autouse=True)
def _inside_one_window():
    """Count well inside one 60-second window, so the count cannot reset half-way."""
    left = 60 - (time.time() % 60)
    if left < 8:
        time.sleep(left + 0.05)


def test_sixty_wrong_secrets_from_one_address_do_not_lock_the_partner_out(api_client, partner_creds):
    for _ in range(60):
        response = api_client.post(
            TOKEN_URL, _body(partner_creds.client_id, "sec_guess"), format="json", REMOTE_ADDR=ATTACKER
        )
        assert_error(response, 401, "INVALID_CREDENTIALS")
    assert_error(
        api_client.post(
            TOKEN_URL, _body(partner_creds.client_id, "sec_guess"), format="json", REMOTE_ADDR=ATTACKER
        ),
        429,
        "RATE_LIMIT_EXCEEDED",
    )

    response = api_client.post(
        TOKEN_URL,
        _body(partner_creds.client_id, partner_creds.client_secret),
        format="json",
        REMOTE_ADDR=PARTNER_OFFICE,
    )
    assert response.status_code == 200, response.content
    assert response.json()["data"]["access_token"]


def test_one_address_spraying_many_client_ids_is_limited(api_client, partner_creds, settings):
    settings.TOKEN_FAILURES_PER_IP_PER_MINUTE = 10
    for i in range(10):
        response = api_client.post(
            TOKEN_URL, _body(f"cli_spray{i}", "sec_x"), format="json", REMOTE_ADDR=ATTACKER
        )
        assert_error(response, 401, "INVALID_CREDENTIALS")  # each client_id is new: its own bucket is empty
    response = api_client.post(
        TOKEN_URL, _body("cli_spray_next", "sec_x"), format="json", REMOTE_ADDR=ATTACKER
    )
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    assert int(response["Retry-After"]) in range(1, 61)
    # refused before any lookup, even with the right secret of a real partner: the address is stopped
    response = api_client.post(
        TOKEN_URL,
        _body(partner_creds.client_id, partner_creds.client_secret),
        format="json",
        REMOTE_ADDR=ATTACKER,
    )
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    # ... and only that address
    response = api_client.post(
        TOKEN_URL,
        _body(partner_creds.client_id, partner_creds.client_secret),
        format="json",
        REMOTE_ADDR=PARTNER_OFFICE,
    )
    assert response.status_code == 200, response.content


def test_successful_token_requests_do_not_count_as_failures_of_the_address(
    api_client, partner_creds, settings
):
    settings.TOKEN_FAILURES_PER_IP_PER_MINUTE = 3
    for _ in range(6):
        response = api_client.post(
            TOKEN_URL,
            _body(partner_creds.client_id, partner_creds.client_secret),
            format="json",
            REMOTE_ADDR=PARTNER_OFFICE,
        )
        assert response.status_code == 200, response.content
