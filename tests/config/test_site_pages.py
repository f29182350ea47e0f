"""Pages for people outside the API: the root points to the docs and the portal; errors are styled pages."""

import pytest


@pytest.mark.django_db
def test_root_points_to_the_api_reference_and_the_portal(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/v1/docs"' in html
    assert 'href="/portal/"' in html
    assert "portal/portal.css" in html


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/no-such-page", "/portal/no-such-page/"])
def test_unknown_pages_outside_the_api_are_a_styled_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "Page not found" in html
    assert 'href="/portal/"' in html


@pytest.mark.django_db
def test_unknown_api_path_stays_the_json_envelope(client):
    response = client.get("/v1/no-such-endpoint")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_server_error_page_renders_without_a_request_context(rf):
    from config.views import handler500

    response = handler500(rf.get("/portal/"))
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
