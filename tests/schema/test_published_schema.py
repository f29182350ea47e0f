"""The OpenAPI document partners get: docs/partners/openapi.json, written by `make schema`, is exactly what the code
generates and what `/v1/schema` serves, passes an outside validator, and declares for each request body the content
types a client should send."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "partners" / "openapi.json"
MAKEFILE = ROOT / "Makefile"


def generated(tmp_path: Path) -> bytes:
    """What `make schema` writes, made by the command its recipe runs."""
    # The recipe runs it on the test run's services (``with_services``): the command is what it wraps.
    recipe = re.search(
        r"^schema:.*\n\t(?:\$\(call with_services,)?\$\(PY\) manage\.py ([^)\n]+)\)?$",
        MAKEFILE.read_text(),
        flags=re.M,
    )
    assert recipe, "the Makefile has a `schema` target running manage.py"
    arguments = recipe.group(1).split()
    assert arguments[arguments.index("--file") + 1] == "docs/partners/openapi.json"
    arguments[arguments.index("--file") + 1] = str(tmp_path / "openapi.json")
    call_command(*arguments)
    return (tmp_path / "openapi.json").read_bytes()


def test_the_published_file_is_what_the_code_generates(tmp_path):
    assert generated(tmp_path) == PUBLISHED.read_bytes(), (
        "docs/partners/openapi.json differs from what the code generates: run `make schema` and commit it"
    )


def test_a_change_in_the_code_shows_as_a_difference(tmp_path, monkeypatch):
    from config.api import schema

    changed = {**schema.REQUEST_ID_PARAMETER, "description": "Your own id for this request."}
    monkeypatch.setattr(schema, "REQUEST_ID_PARAMETER", changed)
    assert generated(tmp_path) != PUBLISHED.read_bytes()


@pytest.mark.django_db
def test_v1_schema_serves_the_published_document(api_client):
    response = api_client.get("/v1/schema")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == json.loads(PUBLISHED.read_bytes())
    yaml = api_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert yaml.status_code == 200 and yaml.content.startswith(b"openapi: 3.0.3")


def test_the_published_file_passes_the_openapi_validator():
    validate(json.loads(PUBLISHED.read_bytes()))


def test_the_validator_refuses_a_broken_document():
    document = json.loads(PUBLISHED.read_bytes())
    del document["paths"]["/v1/orders"]["post"]["responses"]
    with pytest.raises(OpenAPIValidationError):
        validate(document)


def test_each_request_body_declares_what_a_client_sends():
    document = json.loads(PUBLISHED.read_bytes())
    bodies = {
        f"{method.upper()} {path}": list(operation["requestBody"]["content"])
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
        if isinstance(operation, dict) and "requestBody" in operation
    }
    assert bodies.pop("POST /v1/auth/token") == ["application/json", "application/x-www-form-urlencoded"]
    assert bodies.pop("POST /v1/orders") == ["multipart/form-data"]
    assert len(bodies) >= 8
    assert {name: kinds for name, kinds in bodies.items() if kinds != ["application/json"]} == {}


def test_every_operation_takes_its_own_request_id():
    document = json.loads(PUBLISHED.read_bytes())
    operations = [
        operation
        for methods in document["paths"].values()
        for operation in methods.values()
        if isinstance(operation, dict) and "responses" in operation
    ]
    assert len(operations) >= 20
    for operation in operations:
        (parameter,) = [p for p in operation["parameters"] if p["name"] == "X-Request-ID"]
        assert parameter["in"] == "header" and parameter["required"] is False
