from tests.conftest import assert_error


def test_token_endpoint_issues_bearer_token(api_client, partner_creds):
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
    body = response.json()
    assert body["success"] is True
    assert body["data"]["token_type"] == "Bearer"
    assert body["data"]["expires_in"] == 3600


def test_unknown_path_is_enveloped_404(api_client, db):
    assert_error(api_client.get("/v1/nope"), 404, "NOT_FOUND")
