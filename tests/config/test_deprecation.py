"""A route marked deprecated answers, errors included, with ``Deprecation`` (RFC 9745), ``Sunset`` (RFC 8594) and a
``Link`` to the changelog (docs/partners/compatibility.md "Deprecations"); every other route answers without them,
and the changelog the link names is served."""

from datetime import UTC, datetime

import pytest

from config.api.deprecation import Deprecation
from tests.config.urls_deprecated import DEPRECATED_SINCE

pytestmark = [pytest.mark.urls("tests.config.urls_deprecated"), pytest.mark.django_db]

EXPECTED = {
    "Deprecation": f"@{int(DEPRECATED_SINCE.timestamp())}",
    "Sunset": "Mon, 02 Sep 2024 00:00:00 GMT",
    "Link": '</changelog#2024-03-01>; rel="deprecation"; type="text/plain", '
    '</changelog#2024-03-01>; rel="sunset"; type="text/plain"',
}


def test_a_deprecated_route_answers_with_deprecation_sunset_and_the_changelog_link(auth_client):
    response = auth_client.get("/v1/events")
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert {name: response[name] for name in EXPECTED} == EXPECTED
    assert EXPECTED["Deprecation"] == "@1709251200"


def test_a_deprecated_routes_errors_carry_the_headers_too(api_client, auth_client):
    refused = api_client.get("/v1/events")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHORIZED"
    assert {name: refused[name] for name in EXPECTED} == EXPECTED
    invalid = auth_client.get("/v1/events", {"limit": "0"})
    assert invalid.status_code == 400 and invalid["Deprecation"] == EXPECTED["Deprecation"]


def test_the_schema_marks_the_deprecated_operation_and_documents_its_headers(api_client):
    paths = api_client.get("/v1/schema").json()["paths"]
    events = paths["/v1/events"]["get"]
    assert events["deprecated"] is True
    for response in events["responses"].values():
        assert {name: response["headers"][name]["example"] for name in EXPECTED} == EXPECTED
    others = [op for path, ops in paths.items() for op in ops.values() if path != "/v1/events"]
    assert len(others) >= 20 and not [op for op in others if op.get("deprecated")]


def test_other_routes_answer_without_deprecation_headers(auth_client):
    response = auth_client.get("/v1/events/evt_missing")
    assert response.status_code == 404
    assert not {"Deprecation", "Sunset", "Link"} & set(response.headers)


def test_an_undated_deprecation_sends_no_sunset():
    headers = Deprecation(since=DEPRECATED_SINCE).headers()
    assert headers == {
        "Deprecation": "@1709251200",
        "Link": '</changelog>; rel="deprecation"; type="text/plain"',
    }


@pytest.mark.parametrize(
    "since, sunset",
    [
        (datetime(2024, 3, 1), None),  # no time zone
        (DEPRECATED_SINCE, datetime(2024, 2, 29, tzinfo=UTC)),  # sunset before the deprecation
    ],
)
def test_a_deprecation_refuses_instants_that_cannot_be_meant(since, sunset):
    with pytest.raises(ValueError):
        Deprecation(since=since, sunset=sunset)


def test_the_changelog_the_link_names_is_served(client):
    response = client.get("/changelog")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode().startswith("# Changelog")
