"""Schema fuzzing in-process: schemathesis drives every operation of ``/v1/schema`` through the WSGI application.

With a valid bearer token and without one. Every answer must: not be a 5xx, have a status the schema
documents for the operation, match the documented response schema and headers, and be the envelope of
docs/partners/conventions.md "API conventions". Path parameters and bodies are sometimes swapped for ids of real objects (an event with
sections and rows, the partner's own quote, order and webhook endpoint) so that the 2xx paths are fuzzed
too, not only the 404s of random ids. The checks and their allow-list are tests/schema/fuzzing.py's, which
the live fuzzer (tests/schema/test_live_fuzz.py) shares.

``make test`` runs a bounded number of examples per operation (``FUZZ_EXAMPLES``, default 50);
``make fuzz`` runs many more.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from config.core.request_cycle import SERVER_RECEIVERS
from config.wsgi import application
from tests.schema.fuzzing import CHECKS, World, adopt_real_ids, build_world

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))


@pytest.fixture
def world(db) -> World:
    """A partner with payment methods and a token, an upcoming event, one open quote, one order and one
    webhook endpoint."""
    return build_world()


@pytest.fixture(autouse=True)
def _one_connection_per_test(world):
    """schemathesis calls the WSGI app directly; like Django's test client, keep the test's connection
    (and its transaction) open across requests instead of closing it at each request's start and end."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    for signal, function, sender in SERVER_RECEIVERS:
        signal.disconnect(function, sender=sender)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)
    for signal, function, sender in SERVER_RECEIVERS:
        signal.connect(function, sender=sender)


# Loaded once at collection through the WSGI app (drf-spectacular needs no database).
schema = schemathesis.openapi.from_wsgi("/v1/schema", application)


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@schema.parametrize()
@FUZZ
def test_every_operation_with_a_valid_token(case, world):
    adopt_real_ids(case, world)
    case.call_and_validate(headers={"Authorization": f"Bearer {world.token}"}, **CHECKS)


@schema.parametrize()
@FUZZ
def test_every_operation_without_a_token(case, world):
    adopt_real_ids(case, world)
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    response = case.call_and_validate(**CHECKS)
    if case.operation.path != "/v1/auth/token":
        # 401 before anything else; only a path no route matches (an id holding a newline) is 404 NOT_FOUND.
        code = response.json()["error"]["code"]
        assert (response.status_code, code) in {(401, "UNAUTHORIZED"), (404, "NOT_FOUND")}, response.text[
            :300
        ]


def test_documented_error_answers_are_in_the_catalogue():
    """Every error a response documents (by status and code example) exists with that status."""
    from config.api.errors import all_error_classes

    catalogue = {cls.code: cls.status for cls in all_error_classes()}
    seen = 0
    for path, methods in schema.raw_schema["paths"].items():
        for method, operation in methods.items():
            for status, response in operation.get("responses", {}).items():
                if not status.startswith(("4", "5")):
                    continue
                content = response.get("content", {}).get("application/json", {})
                assert content.get("schema") == {"$ref": "#/components/schemas/ErrorEnvelope"}, (
                    path,
                    method,
                    status,
                )
                for example in content.get("examples", {}).values():
                    code = example["value"]["error"]["code"]
                    assert catalogue.get(code) == int(status), (path, method, status, code)
                    seen += 1
    assert seen > 20


def test_the_fuzzers_allow_list_reads_formats_as_the_api_does():
    """An empty ``seller_email`` is valid (``oneOf`` an e-mail or ""): with formats asserted it matches one branch
    only, so the live fuzzer does not read an order with it as schema-violating data that was accepted."""
    import json
    from pathlib import Path
    from types import SimpleNamespace

    from tests.schema import fuzzing

    published = Path(__file__).resolve().parents[2] / "docs" / "partners" / "openapi.json"
    raw = json.loads(published.read_text())
    case = SimpleNamespace(operation=SimpleNamespace(schema=SimpleNamespace(raw_schema=raw)))
    email = raw["components"]["schemas"]["OrderCreateRequest"]["properties"]["seller_email"]
    assert fuzzing._valid(case, "", email)
    assert fuzzing._valid(case, "seller@example.com", email)
    assert not fuzzing._valid(case, "not an address", email)
