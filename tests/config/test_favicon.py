"""The favicon every page links."""

import pytest


@pytest.mark.django_db
def test_favicon_is_an_icon_every_page_links(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert "max-age" in response["Cache-Control"]
    for page in ("/", "/portal/login", "/no-such-page"):
        html = client.get(page).content.decode()
        assert '<link rel="icon" href="/favicon.ico"' in html, page
