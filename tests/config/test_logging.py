import json
import logging

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
