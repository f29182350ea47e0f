"""The IETF draft's RateLimit-Policy and RateLimit fields, beside RateLimit-Limit/Remaining/Reset."""

import re
import time
from datetime import UTC, datetime

import pytest

from config.api import ratelimit

pytestmark = pytest.mark.urls("tests.config.urls_probe")

POLICY = re.compile(r'^"(?P<name>[a-z]+)";q=(?P<q>\d+);w=(?P<w>\d+)$')
STATE = re.compile(r'^"(?P<name>[a-z]+)";r=(?P<r>\d+);t=(?P<t>\d+)$')


def _early_in_a_minute(time_machine) -> None:
    """The clock stands still 10 s into the next minute: two requests fall into one window of the limiter."""
    time_machine.move_to(datetime.fromtimestamp((time.time() // 60 + 1) * 60 + 10, tz=UTC), tick=False)


def _fields(response) -> tuple[dict, dict]:
    policy, state = POLICY.match(response["RateLimit-Policy"]), STATE.match(response["RateLimit"])
    assert policy and state, (response["RateLimit-Policy"], response["RateLimit"])
    return policy.groupdict(), state.groupdict()


def test_authenticated_responses_carry_the_policy_and_the_remaining_quota(
    auth_client, settings, time_machine
):
    settings.RATE_LIMIT_PER_MINUTE = 600
    _early_in_a_minute(time_machine)
    first = auth_client.get("/v1/_scoped")
    second = auth_client.get("/v1/_scoped")
    policy, state = _fields(first)
    assert policy == {"name": "default", "q": "600", "w": "60"}
    assert state["name"] == "default"
    assert int(state["r"]) == int(first["RateLimit-Remaining"])
    assert int(state["t"]) == int(first["RateLimit-Reset"]) == 50
    assert int(_fields(second)[1]["r"]) == int(state["r"]) - 1


def test_error_answers_of_authenticated_calls_carry_them_too(auth_client, settings, time_machine):
    settings.RATE_LIMIT_PER_MINUTE = 1
    _early_in_a_minute(time_machine)
    auth_client.get("/v1/_scoped")
    refused = auth_client.get("/v1/_scoped")
    assert refused.status_code == 429
    policy, state = _fields(refused)
    assert policy["q"] == "1" and state["r"] == "0"
    assert int(state["t"]) == int(refused["Retry-After"]) == 50
    # An error of the API itself (here a 404, under a limit that lets the request through) carries them too.
    settings.RATE_LIMIT_PER_MINUTE = 600
    missing = auth_client.get("/v1/events/evt_doesnotexist")
    assert missing.status_code == 404
    assert _fields(missing)[0]["q"] == "600"


def test_the_token_endpoint_names_its_own_policy(api_client, partner_creds, settings):
    settings.TOKEN_RATE_LIMIT_PER_MINUTE = 60
    response = api_client.post(
        "/v1/auth/token",
        {
            "client_id": partner_creds.client_id,
            "client_secret": partner_creds.client_secret,
            "grant_type": "client_credentials",
        },
        format="json",
    )
    assert response.status_code == 200
    policy, state = _fields(response)
    assert policy == {"name": "token", "q": "60", "w": "60"}
    assert state["name"] == "token"


def test_state_renders_structured_fields():
    state = ratelimit.RateLimitState(limit=600, remaining=599, reset=42, exceeded=False)
    assert state.headers()["RateLimit-Policy"] == '"default";q=600;w=60'
    assert state.headers()["RateLimit"] == '"default";r=599;t=42'
