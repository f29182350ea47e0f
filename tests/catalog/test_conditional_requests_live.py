"""A conditional read through the production shape's gunicorn (gthread workers, keep-alive): the 304 carries no
``Content-Length`` (HTTP allows it only the 200's own length) and no chunked encoding, and the connection stays
usable for the next answer."""

import json
from datetime import timedelta
from http.client import HTTPConnection
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from tests.conftest import make_partner
from tests.faults.live import bearer_auth, production_env

from .factories import EventFactory, RowFactory, SectionFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_304_through_gunicorn_has_no_length_and_keeps_the_connection(processes):
    event = EventFactory(name="Kept Alive Live", starts_at=timezone.now() + timedelta(days=30))
    RowFactory(section=SectionFactory(event=event, name="Lower 101"), name="A", available_quantity=3)
    creds = make_partner(name="Keep Alive Resale", email="ops@keepalive.example")
    url = processes.web(production_env())
    auth = bearer_auth(url, creds)
    path = f"/v1/events/{event.event_id}/sections/Lower%20101/rows"
    address = urlsplit(url)
    connection = HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.request("GET", path, headers=auth)
        first = connection.getresponse()
        body = first.read()
        assert first.status == 200 and int(first.headers["Content-Length"]) == len(body) > 0
        for _ in range(2):
            connection.request("GET", path, headers={**auth, "If-None-Match": first.headers["ETag"]})
            again = connection.getresponse()
            assert (again.status, again.read()) == (304, b"")
            assert again.headers["ETag"] == first.headers["ETag"]
            assert "Content-Length" not in again.headers and "Transfer-Encoding" not in again.headers
            assert again.headers["Connection"] == "keep-alive"
        connection.request("GET", path, headers=auth)
        after = connection.getresponse()
        assert after.status == 200
        assert json.loads(after.read())["data"] == json.loads(body)["data"]
    finally:
        connection.close()
