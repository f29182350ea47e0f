"""Forged client-address headers do not buy a fresh rate-limit bucket."""

import time

import pytest

from tests.conftest import assert_error

SPOOFS = [
    {"HTTP_X_FORWARDED_FOR": "203.0.113.1"},
    {"HTTP_X_REAL_IP": "203.0.113.2"},
    {"HTTP_FORWARDED": "for=203.0.113.3;proto=https"},
    {"HTTP_X_CLIENT_IP": "203.0.113.4"},
    {"HTTP_TRUE_CLIENT_IP": "203.0.113.5"},
    {"HTTP_CF_CONNECTING_IP": "203.0.113.6"},
    {"HTTP_X_FORWARDED_FOR": "127.0.0.1, 10.0.0.1, 203.0.113.7"},
]


@pytest.fixture(autouse=True)
def _inside_one_window():
    """Start counting well inside one 60-second window, so the count cannot reset half-way."""
    left = 60 - (time.time() % 60)
    if left < 5:
        time.sleep(left + 0.05)


def _token_body(client_id: str = "cli_spoofer") -> dict:
    return {"client_id": client_id, "client_secret": "sec_wrong", "grant_type": "client_credentials"}


def test_partner_limit_holds_whatever_address_headers_say(auth_client, settings):
    settings.RATE_LIMIT_PER_MINUTE = 3
    statuses = [auth_client.get("/v1/events", **SPOOFS[i]).status_code for i in range(3)]
    assert statuses == [200, 200, 200]
    for spoof in SPOOFS[3:]:
        assert_error(auth_client.get("/v1/events", **spoof), 429, "RATE_LIMIT_EXCEEDED")


def test_token_limit_ignores_address_headers_without_a_trusted_proxy(api_client, db, settings):
    settings.TOKEN_RATE_LIMIT_PER_MINUTE = 2
    settings.TRUSTED_PROXY_COUNT = 0
    for spoof in SPOOFS[:2]:
        assert_error(
            api_client.post("/v1/auth/token", _token_body(), format="json", **spoof),
            401,
            "INVALID_CREDENTIALS",
        )
    for spoof in SPOOFS[2:]:
        response = api_client.post("/v1/auth/token", _token_body(), format="json", **spoof)
        assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
        assert int(response["Retry-After"]) >= 1


def test_behind_one_proxy_only_the_address_it_appended_counts(api_client, db, settings):
    settings.TOKEN_RATE_LIMIT_PER_MINUTE = 2
    settings.TRUSTED_PROXY_COUNT = 1

    def from_client(forged: str, real: str = "198.51.100.9"):
        # The client sends X-Forwarded-For: <forged>; our proxy appends the address it saw.
        return api_client.post(
            "/v1/auth/token", _token_body(), format="json", HTTP_X_FORWARDED_FOR=f"{forged}, {real}"
        )

    assert from_client("203.0.113.10").status_code == 401
    assert from_client("203.0.113.11").status_code == 401
    assert_error(from_client("203.0.113.12"), 429, "RATE_LIMIT_EXCEEDED")
    assert_error(from_client("198.51.100.200, 203.0.113.13"), 429, "RATE_LIMIT_EXCEEDED")
    # A genuinely different client (another address seen by the proxy) has its own bucket.
    assert from_client("203.0.113.12", real="198.51.100.10").status_code == 401
