import json
import logging

import pytest

from config.logging import JsonFormatter, RequestIdFilter, request_id_var


def test_json_lines_carry_the_request_id_and_extra_fields():
    token = request_id_var.set("req_abc")
    try:
        record = logging.getLogger("partners.services").makeRecord(
            "partners.services",
            logging.INFO,
            __file__,
            1,
            "credentials rotated",
            (),
            None,
            extra={"client_id": "cli_x"},
        )
    finally:
        request_id_var.reset(token)
    RequestIdFilter().filter(record)
    line = JsonFormatter().format(record)
    payload = json.loads(line)
    assert payload["request_id"] == "req_abc"
    assert payload["message"] == "credentials rotated"
    assert payload["client_id"] == "cli_x"
    assert payload["level"] == "INFO"
    assert payload["ts"].endswith("Z")
    assert "\n" not in line


SECRET = "eyJ2IjoxLCJwIjoicHRuX1NFQ1JFVFRPS0VO.c2lnbmF0dXJl"


@pytest.mark.urls("tests.config.urls_probe")
@pytest.mark.django_db
def test_a_5xx_log_line_names_method_and_path_never_the_query_string(client):
    """django.request logs a 500 with the request attached: the JSON line says its method and path, and
    nothing of the query string a client may have put its token in."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.setFormatter(JsonFormatter())
    handler.emit = lambda record: lines.append(handler.format(record))
    handler.addFilter(RequestIdFilter())
    django_request = logging.getLogger("django.request")
    django_request.addHandler(handler)
    client.raise_request_exception = False
    try:
        response = client.get(f"/v1/_plain_boom?limit=1&access_token={SECRET}")
    finally:
        django_request.removeHandler(handler)
    assert response.status_code == 500
    assert len(lines) == 1, lines
    payload = json.loads(lines[0])
    assert payload["level"] == "ERROR" and payload["status_code"] == 500
    assert payload["method"] == "GET" and payload["path"] == "/v1/_plain_boom"
    assert "request" not in payload
    assert SECRET not in lines[0] and "access_token" not in lines[0]
