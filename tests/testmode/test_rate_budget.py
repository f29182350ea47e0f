"""The per-partner rate budget: live and test mode count apart, and a call that is not the partner's (a
revoked token) or that is refused for its mode costs nothing."""

import pytest

from partners import services
from tests.config.test_ratelimit import _avoid_window_edge
from tests.conftest import assert_error

from .conftest import client_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.config.urls_probe")]
SCOPED = "/v1/_scoped"


def _spend(client, n: int) -> list[int]:
    return [client.get(SCOPED).status_code for _ in range(n)]


def test_live_and_test_mode_have_their_own_budgets(settings, live_client, test_client):
    settings.RATE_LIMIT_PER_MINUTE = 3
    _avoid_window_edge()
    assert _spend(live_client, 4) == [200, 200, 200, 429]
    # Live traffic used up its budget; test mode's is untouched, and the other way round.
    assert _spend(test_client, 4) == [200, 200, 200, 429]
    assert_error(live_client.get(SCOPED), 429, "RATE_LIMIT_EXCEEDED")


def test_a_revoked_token_costs_the_partner_no_budget(settings, pairs):
    settings.RATE_LIMIT_PER_MINUTE = 3
    old = client_for(pairs.live)
    issued = services.credentials_rotate(partner=pairs.partner, livemode=True)  # old tokens revoked
    _avoid_window_edge()
    for _ in range(10):
        assert_error(old.get(SCOPED), 401, "UNAUTHORIZED")
    pairs.live.client_secret = issued.client_secret
    fresh = client_for(pairs.live)
    first = fresh.get(SCOPED)
    assert first.status_code == 200
    assert first["RateLimit-Remaining"] == "2"  # the ten refused calls counted for nothing
    assert _spend(fresh, 3) == [200, 200, 429]


def test_a_live_token_at_a_test_mode_endpoint_costs_no_budget(settings, live_client):
    settings.RATE_LIMIT_PER_MINUTE = 3
    _avoid_window_edge()
    for _ in range(5):
        assert_error(
            live_client.post("/v1/test/orders/ord_nope/advance", {}, format="json"), 403, "TEST_MODE_ONLY"
        )
    assert _spend(live_client, 4) == [200, 200, 200, 429]
